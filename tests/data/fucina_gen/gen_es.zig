//! Runs Fucina's own es.Trainer through fixed scenarios and prints every parameter byte after
//! every perturb, restore, materializeMember and update, with the update's statistics
//! (tests/data/golden/fucina_es.txt; format in README.md, "Evolution strategies"). Only the
//! scenarios and the formatting are ours; the arithmetic is Fucina's.
//!
//! Slot layouts (registration order):
//!   std         src/es_tests.zig's slots: a f32 [7], b f16 [8], c bf16 [5], d f32 [7]
//!   std_c_last  the same slots as a, b, d, c (the anchor scenarios; see Layout)
//!   large       a f32 [7], bigh f16 [4100], bigb bf16 [3000], big f32 [5000]: more than one
//!               2048-element noise chunk and past Fucina's update fan-out threshold (values from
//!               the integer-exact streams of common.zig: big seed 1001 scale 2, bigh 1002 scale 2,
//!               bigb 1003 scale 4, narrowed with RNE)
const std = @import("std");
const fucina = @import("fucina");
const es = fucina.es;
const Tensor = fucina.Tensor;
const Ctx = fucina.ExecContext;
const common = @import("common.zig");

const V = Tensor(.{.n});
const VH = Tensor(.{ .dtype = .f16, .tags = .{.n} });
const VB = Tensor(.{ .dtype = .bf16, .tags = .{.n} });

const theta_a = [_]f32{ 0.8, -1.25, 0.5, 2.0, -0.125, 1.5, -0.75 };
const theta_b = [_]f16{ 0.5, -0.25, 1.0, -1.5, 2.0, 0.125, -0.875, 0.0625 };
const theta_c = [_]f32{ 1.0, -2.0, 0.5, -0.25, 3.0 };
const theta_d = [_]f32{ -0.5, 0.75, -1.0, 0.25, 1.125, -2.5, 0.375 };

const Layout = enum {
    std,
    /// std registered as a, b, d, c: Fucina's anchor slab concatenates the slots' bytes, so
    /// after b (16 bytes) and c (10 bytes) d would start at byte 54 and Fucina's anchorSlot
    /// panics on the misaligned f32 view in safe builds (README.md); with c last every
    /// slot starts aligned.
    std_c_last,
    large,
};

/// Four slots: fields s0 f32, s1 f16, s2 bf16, s3 f32, registered in `order`.
const Params = struct {
    names: [4][]const u8,
    order: [4]usize = .{ 0, 1, 2, 3 },
    s0: V,
    s1: VH,
    s2: VB,
    s3: V,

    fn init(ctx: *Ctx, a: std.mem.Allocator, layout: Layout) !Params {
        switch (layout) {
            .std, .std_c_last => {
                var c_bits: [theta_c.len]u16 = undefined;
                for (&c_bits, theta_c) |*b, v| b.* = fucina.f32ToBf16(v);
                return .{
                    .names = .{ "a", "b", "c", "d" },
                    .order = if (layout == .std) .{ 0, 1, 2, 3 } else .{ 0, 1, 3, 2 },
                    .s0 = try V.fromSlice(ctx, .{theta_a.len}, &theta_a),
                    .s1 = try VH.fromSlice(ctx, .{theta_b.len}, &theta_b),
                    .s2 = try VB.fromSlice(ctx, .{theta_c.len}, &c_bits),
                    .s3 = try V.fromSlice(ctx, .{theta_d.len}, &theta_d),
                };
            },
            .large => {
                const big = try common.streamAlloc(a, 5000, 1001, 2.0);
                defer a.free(big);
                const h32 = try common.streamAlloc(a, 4100, 1002, 2.0);
                defer a.free(h32);
                const h = try a.alloc(f16, h32.len);
                defer a.free(h);
                for (h, h32) |*o, v| o.* = @floatCast(v);
                const b32 = try common.streamAlloc(a, 3000, 1003, 4.0);
                defer a.free(b32);
                const b = try a.alloc(u16, b32.len);
                defer a.free(b);
                for (b, b32) |*o, v| o.* = fucina.f32ToBf16(v);
                return .{
                    .names = .{ "a", "bigh", "bigb", "big" },
                    .s0 = try V.fromSlice(ctx, .{theta_a.len}, &theta_a),
                    .s1 = try VH.fromSlice(ctx, .{h.len}, h),
                    .s2 = try VB.fromSlice(ctx, .{b.len}, b),
                    .s3 = try V.fromSlice(ctx, .{big.len}, big),
                };
            },
        }
    }

    fn deinit(p: *Params) void {
        p.s3.deinit();
        p.s2.deinit();
        p.s1.deinit();
        p.s0.deinit();
    }

    fn register(p: *Params, t: *es.Trainer) !void {
        for (p.order) |f| switch (f) {
            0 => try t.addParamNamed(&p.s0, p.names[0]),
            1 => try t.addParamNamed(&p.s1, p.names[1]),
            2 => try t.addParamNamed(&p.s2, p.names[2]),
            else => try t.addParamNamed(&p.s3, p.names[3]),
        };
    }

    fn len(p: *const Params, f: usize) !usize {
        return switch (f) {
            0 => (try p.s0.dataConst()).len,
            1 => (try p.s1.dataConst()).len,
            2 => (try p.s2.dataConst()).len,
            else => (try p.s3.dataConst()).len,
        };
    }

    /// `v NAME ...` for every slot, in registration order.
    fn print(p: *const Params, out: *std.Io.Writer) !void {
        for (p.order) |f| switch (f) {
            0 => try printValues(out, p.names[0], try p.s0.dataConst()),
            1 => try printValues(out, p.names[1], try p.s1.dataConst()),
            2 => try printValues(out, p.names[2], try p.s2.dataConst()),
            else => try printValues(out, p.names[3], try p.s3.dataConst()),
        };
    }

    /// `slot NAME DTYPE N` lines: the registration order, dtypes and lengths.
    fn declare(p: *const Params, out: *std.Io.Writer) !void {
        const dtypes = [4][]const u8{ "f32", "f16", "bf16", "f32" };
        for (p.order) |f| try out.print("slot {s} {s} {d}\n", .{ p.names[f], dtypes[f], try p.len(f) });
    }
};

/// `v NAME` then the bit patterns (8 hex digits per f32, 4 per f16/bf16) of up to 64 values,
/// or `fnv=` of the little-endian bytes beyond that.
fn printValues(out: *std.Io.Writer, name: []const u8, data: anytype) !void {
    const bytes = std.mem.sliceAsBytes(data);
    try out.print("v {s}", .{name});
    if (data.len > 64) {
        try common.writeFnv(out, bytes);
    } else if (@sizeOf(@TypeOf(data[0])) == 4) {
        try common.writeF32Bits(out, data);
    } else {
        try common.writeU16Bits(out, bytes);
    }
    try out.writeByte('\n');
}

const Scenario = struct {
    name: []const u8,
    cfg: es.Config,
    layout: Layout = .std,
    /// One reward vector per update (population values each).
    rewards: []const []const f32,
    /// Perturb and restore every member before each update, printing both.
    loop: bool = true,
    /// captureAnchor right after registration.
    anchor: bool = false,
    /// materializeMember of every member before each update.
    materialize: bool = false,
};

fn bits32(x: f32) u32 {
    return @bitCast(x);
}

fn writeHeader(out: *std.Io.Writer, s: *const Scenario) !void {
    const c = s.cfg;
    try out.print("case {s} sigma={x:0>8}", .{ s.name, bits32(c.sigma) });
    if (c.alpha) |alpha| try out.print(" alpha={x:0>8}", .{bits32(alpha)}) else try out.writeAll(" alpha=none");
    try out.print(" population={d} antithetic={d} noise={s} restore={s} cache={d} anchor={s} lambda={x:0>8} norm={s} seed={x:0>16}\n", .{
        c.population,
        @intFromBool(c.antithetic),
        @tagName(c.noise),
        @tagName(c.restore_mode),
        @intFromBool(c.cache_streams),
        @tagName(c.anchor_decay),
        bits32(c.anchor_lambda),
        @tagName(c.reward_norm),
        c.seed,
    });
}

fn materializeAll(t: *const es.Trainer, p: *const Params, a: std.mem.Allocator, out: *std.Io.Writer) !void {
    const rep0 = try a.alloc(f32, try p.len(0));
    defer a.free(rep0);
    const rep1 = try a.alloc(f16, try p.len(1));
    defer a.free(rep1);
    const rep2 = try a.alloc(u16, try p.len(2));
    defer a.free(rep2);
    const rep3 = try a.alloc(f32, try p.len(3));
    defer a.free(rep3);
    const by_field = [4][]u8{ std.mem.sliceAsBytes(rep0), std.mem.sliceAsBytes(rep1), std.mem.sliceAsBytes(rep2), std.mem.sliceAsBytes(rep3) };
    var dst: [4][]u8 = undefined;
    for (&dst, p.order) |*d, f| d.* = by_field[f];
    for (0..t.config.population) |m| {
        try t.materializeMember(m, &dst);
        try out.print("materialize {d}\n", .{m});
        for (p.order) |f| switch (f) {
            0 => try printValues(out, p.names[0], rep0),
            1 => try printValues(out, p.names[1], rep1),
            2 => try printValues(out, p.names[2], rep2),
            else => try printValues(out, p.names[3], rep3),
        };
    }
}

fn run(ctx: *Ctx, a: std.mem.Allocator, s: *const Scenario, out: *std.Io.Writer) !void {
    try writeHeader(out, s);
    var p = try Params.init(ctx, a, s.layout);
    defer p.deinit();
    try p.declare(out);
    try out.writeAll("init\n");
    try p.print(out);
    var t = try es.Trainer.init(a, s.cfg);
    defer t.deinit();
    try p.register(&t);
    if (s.anchor) {
        try t.captureAnchor();
        try out.writeAll("anchor\n");
    }
    for (s.rewards) |r| {
        if (s.materialize) try materializeAll(&t, &p, a, out);
        if (s.loop) {
            for (0..s.cfg.population) |m| {
                try t.perturb(ctx, m);
                try out.print("perturb {d}\n", .{m});
                try p.print(out);
                try t.restore(ctx, m);
                try out.print("restore {d}\n", .{m});
                try p.print(out);
            }
        }
        const st = try t.update(ctx, r);
        try out.writeAll("update");
        try common.writeF32Bits(out, r);
        try out.print("\nstats mean={x:0>16} std={x:0>16} min={x:0>8} max={x:0>8}\n", .{
            @as(u64, @bitCast(st.mean_reward)),
            @as(u64, @bitCast(st.std_reward)),
            bits32(st.min_reward),
            bits32(st.max_reward),
        });
        try p.print(out);
    }
}

// Reward vectors. Ties and all-equal vectors exercise the rank tiebreak and the z-score's
// exact no-op.
const rw4 = [_][]const f32{ &.{ 0.1, 0.9, -0.4, 0.35 }, &.{ 1.0, -1.0, 0.25, 0.5 }, &.{ -0.3, 0.7, 0.2, -0.05 } };
const rw4_ties = [_][]const f32{ &.{ 0.1, 0.9, -0.4, 0.35 }, &.{ 0.5, 0.5, -1.0, 0.25 }, &.{ 0.3, 0.3, 0.3, 0.3 } };
const rw3 = [_][]const f32{ &.{ 0.5, -0.25, 1.5 }, &.{ -1.0, 0.75, 0.125 }, &.{ 2.0, 2.5, -0.5 } };
const rw6 = [_][]const f32{
    &.{ 0.2, -0.1, 0.6, 0.4, -0.3, 0.05 },
    &.{ 1.5, -2.0, 0.25, 0.25, 3.0, -0.75 },
    &.{ -0.6, 0.1, 0.9, -0.2, 0.4, 0.8 },
};
const rw5 = [_][]const f32{ &.{ 0.3, -0.7, 1.1, 0.0, 0.45 }, &.{ 0.3, 0.3, 0.3, 0.3, 0.3 }, &.{ -2.0, 4.0, 0.5, -0.125, 1.75 } };
const rw8 = [_][]const f32{
    &.{ 0.11, -0.42, 0.93, 0.27, -0.65, 0.38, 0.02, -0.19 },
    &.{ 1.2, 0.4, -0.8, 0.6, -0.1, 0.9, -1.3, 0.05 },
    &.{ -0.25, 0.75, 0.5, -1.5, 2.25, 0.125, -0.375, 1.0 },
};

const cfg_a = es.Config{ .sigma = 0.05, .population = 4, .noise = .iid, .reward_norm = .z_score, .seed = 42 };

fn withA(comptime f: anytype) es.Config {
    var c = cfg_a;
    inline for (std.meta.fields(@TypeOf(f))) |field| @field(c, field.name) = @field(f, field.name);
    return c;
}

const scenarios = [_]Scenario{
    .{ .name = "A", .cfg = cfg_a, .rewards = &rw4 },
    .{ .name = "B", .cfg = .{ .sigma = 0.02, .alpha = 0.01, .population = 3, .noise = .correlated, .reward_norm = .none, .seed = 42 }, .rewards = &rw3 },
    .{ .name = "C", .cfg = withA(.{ .reward_norm = .centered_ranks }), .rewards = &rw4_ties },
    .{ .name = "antithetic", .cfg = .{ .sigma = 0.04, .population = 6, .antithetic = true, .seed = 7 }, .rewards = &rw6, .materialize = true },
    .{ .name = "snapshot", .cfg = withA(.{ .restore_mode = .snapshot }), .rewards = &rw4 },
    .{ .name = "cache", .cfg = withA(.{ .cache_streams = true }), .rewards = &rw4 },
    .{ .name = "cache_antithetic_snapshot", .cfg = .{ .sigma = 0.04, .population = 6, .antithetic = true, .noise = .correlated, .restore_mode = .snapshot, .cache_streams = true, .seed = 7 }, .rewards = &rw6 },
    .{ .name = "l1", .cfg = withA(.{ .anchor_decay = .l1, .anchor_lambda = 0.2 }), .layout = .std_c_last, .rewards = &rw4, .anchor = true },
    .{ .name = "l2", .cfg = withA(.{ .anchor_decay = .l2, .anchor_lambda = 10 }), .layout = .std_c_last, .rewards = &rw4, .anchor = true },
    .{ .name = "materialize", .cfg = cfg_a, .rewards = &rw4, .loop = false, .materialize = true },
    .{ .name = "alpha", .cfg = .{ .sigma = 0.03, .alpha = 0.013, .population = 5, .reward_norm = .z_score, .seed = 0xDEADBEEFCAFEF00D }, .rewards = &rw5 },
    .{ .name = "large", .cfg = .{ .sigma = 0.01, .alpha = 0.02, .population = 8, .antithetic = true, .seed = 99 }, .layout = .large, .rewards = &rw8 },
    .{ .name = "large_ranks_l2", .cfg = .{ .sigma = 0.01, .population = 8, .reward_norm = .centered_ranks, .anchor_decay = .l2, .anchor_lambda = 4, .cache_streams = true, .seed = 5 }, .layout = .large, .rewards = &rw8, .anchor = true, .materialize = true },
};

pub fn main(init: std.process.Init) !void {
    const a = std.heap.page_allocator;
    var buf: [1 << 16]u8 = undefined;
    var fw = std.Io.File.stdout().writer(init.io, &buf);
    const out = &fw.interface;
    var ctx: Ctx = undefined;
    ctx.init(a);
    defer ctx.deinit();
    try out.writeAll("# Fucina 0.2.0 es.Trainer; generator tests/data/fucina_gen/gen_es.zig\n");
    for (&scenarios) |*s| try run(&ctx, a, s, out);
    try out.flush();
}
