//! Writes tests/data/golden/fucina_apollo.txt: APOLLO and APOLLO-Mini trajectories run by
//! Fucina's own optim.Apollo on its scalar backend, so that tests/cpu/test_optim_apollo.cpp
//! can require forgia (with FG_GEMM_EXACT) to give the same bits at every step.
//!
//! Each case line is parsed into Fucina's ApolloConfig (`apollo` starts from the defaults,
//! `mini` from ApolloConfig.mini(); decimal fields through std.fmt.parseFloat(f32)).
//! Parameters: "tall" [6,4] (named), a wide [3,7] (unnamed: param1) (big=1: [300,130] and
//! [40,900], past one 32768-value sumSquares chunk), a [5] vector (goes to
//! the fallback, unnamed: param0 there) and, with fb2d=1, a [2,3] "head" routed to the
//! fallback by addFallbackParamNamed. Parameter j starts from stream 100 + j, its gradient
//! at step k is stream 1000 * (j + 1) + k, both scale 2 (the integer-exact splitmix64
//! streams of gen_optim.zig), delivered through Fucina's autograd as the backward of
//! sum(w * c). p16=bf16|f16 makes every parameter 16-bit (stepped through Fucina's masters).
//! clip > 0 calls clipGradNorm(clip) before each step; skip=K gives the wide parameter no
//! gradient at step K.
//! Output per step k: `step k`, then `m<i>` (main slot i) and `f<i>` (fallback slot i) with
//! the f32 bits (a 16-bit parameter's master), `m<i>_16` / `f<i>_16` the 16-bit bits; after
//! step steps/2 and after the last step, `state <k> <hex of saveState's bytes>`. Beyond 64
//! values a parameter line is `fnv=<FNV-1a-64 of its f32 bytes>`, beyond 4096 bytes a state
//! line `state <k> fnv=<FNV-1a-64 of the bytes>`.
const std = @import("std");
const fucina = @import("fucina");
const optim = fucina.optim;
const Tensor = fucina.Tensor;
const Ctx = fucina.ExecContext;
const common = @import("common.zig");
const P16 = common.P16;
const stream = common.stream;

const cases = [_][]const u8{
    "apollo rank=2 gap=3 steps=8",
    "apollo rank=2 gap=3 steps=8 scale_type=tensor weight_decay=0.1 limiter=0 correct_bias=0",
    "apollo rank=2 gap=2 steps=8 scale=4 scale_front=1 weight_decay=0.05 seed=7",
    "apollo rank=3 gap=4 steps=8 scale=4 lr=0.02 beta1=0.8 beta2=0.95 eps=1e-8 fb2d=1",
    "apollo rank=2 gap=3 steps=8 clip=0.5 skip=3",
    "mini gap=3 steps=8",
    "mini gap=2 steps=8 scale_front=1 weight_decay=0.1",
    "mini gap=5 steps=8 scale_type=channel limiter=0",
    "apollo rank=2 gap=3 steps=8 p16=bf16",
    "mini gap=3 steps=8 p16=f16 fb2d=1",
    "apollo rank=4 gap=2 steps=4 big=1 weight_decay=0.01",
    "mini gap=2 steps=4 big=1 scale_type=channel",
};

const Case = struct {
    cfg: optim.ApolloConfig,
    steps: u32 = 0,
    clip: f32 = 0,
    skip: u32 = 0,
    fb2d: bool = false,
    p16: P16 = .none,
    big: bool = false,
};

fn parse(line: []const u8) !Case {
    var c = Case{ .cfg = if (std.mem.eql(u8, common.kind(line), "mini")) optim.ApolloConfig.mini() else .{} };
    var it = common.Fields.init(line);
    while (it.next()) |f| {
        const k = f.k;
        const v = f.v;
        const eql = std.mem.eql;
        if (eql(u8, k, "rank")) c.cfg.rank = try std.fmt.parseInt(usize, v, 10);
        if (eql(u8, k, "gap")) c.cfg.update_proj_gap = try std.fmt.parseInt(u64, v, 10);
        if (eql(u8, k, "lr")) c.cfg.lr = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "beta1")) c.cfg.beta1 = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "beta2")) c.cfg.beta2 = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "eps")) c.cfg.eps = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "weight_decay")) c.cfg.weight_decay = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "scale")) c.cfg.scale = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "scale_type")) c.cfg.scale_type = if (eql(u8, v, "tensor")) .tensor else .channel;
        if (eql(u8, k, "correct_bias")) c.cfg.correct_bias = eql(u8, v, "1");
        if (eql(u8, k, "scale_front")) c.cfg.scale_front = eql(u8, v, "1");
        if (eql(u8, k, "limiter")) c.cfg.disable_norm_growth_limiter = eql(u8, v, "0");
        if (eql(u8, k, "seed")) c.cfg.seed = try std.fmt.parseInt(u64, v, 10);
        if (eql(u8, k, "steps")) c.steps = try std.fmt.parseInt(u32, v, 10);
        if (eql(u8, k, "clip")) c.clip = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "skip")) c.skip = try std.fmt.parseInt(u32, v, 10);
        if (eql(u8, k, "fb2d")) c.fb2d = eql(u8, v, "1");
        if (eql(u8, k, "big")) c.big = eql(u8, v, "1");
        if (eql(u8, k, "p16")) c.p16 = if (eql(u8, v, "bf16")) .bf16 else if (eql(u8, v, "f16")) .f16 else .none;
    }
    return c;
}

fn printSlots(slots: anytype, tag: []const u8, out: *std.Io.Writer) !void {
    for (slots, 0..) |*slot, j| {
        const p = &slot.param;
        try out.print("{s}{d}", .{ tag, j });
        const f = common.paramF32(p);
        if (f.len > 64) {
            try common.writeFnv(out, std.mem.sliceAsBytes(f));
            try out.writeAll("\n");
            continue;
        }
        try common.writeF32Bits(out, f);
        try out.writeAll("\n");
        const bytes = common.param16(p) orelse continue;
        try out.print("{s}{d}_16", .{ tag, j });
        try common.writeU16Bits(out, bytes);
        try out.writeAll("\n");
    }
}

fn printState(opt: *optim.Apollo, a: std.mem.Allocator, k: u32, out: *std.Io.Writer) !void {
    const bytes = try common.savedState(a, opt);
    defer a.free(bytes);
    if (bytes.len > 4096) {
        try out.print("state {d}", .{k});
        try common.writeFnv(out, bytes);
    } else {
        try out.print("state {d} ", .{k});
        try common.writeHexBytes(out, bytes);
    }
    try out.writeAll("\n");
}

fn run(comptime p16: P16, comptime r0: usize, comptime c0: usize, comptime r1: usize, comptime c1: usize, ctx: *Ctx, a: std.mem.Allocator, c: *const Case, out: *std.Io.Writer) !void {
    const T = common.Types(p16);
    var opt = optim.Apollo.init(a, c.cfg);
    defer opt.deinit();
    const n0 = r0 * c0;
    const n1 = r1 * c1;
    var w0 = try T.M.variableFromSlice(ctx, .{ r0, c0 }, &T.narrow(n0, stream(n0, 100, 2.0)));
    defer w0.deinit();
    var w1 = try T.M.variableFromSlice(ctx, .{ r1, c1 }, &T.narrow(n1, stream(n1, 101, 2.0)));
    defer w1.deinit();
    var w2 = try T.V.variableFromSlice(ctx, .{5}, &T.narrow(5, stream(5, 102, 2.0)));
    defer w2.deinit();
    var w3 = try T.M.variableFromSlice(ctx, .{ 2, 3 }, &T.narrow(6, stream(6, 103, 2.0)));
    defer w3.deinit();
    try opt.addParamNamed(&w0, "tall");
    try opt.addParam(&w1);
    try opt.addParam(&w2);
    if (c.fb2d) try opt.addFallbackParamNamed(&w3, "head");
    var k: u32 = 1;
    while (k <= c.steps) : (k += 1) {
        try common.grad(ctx, &w0, p16, common.M32, .{ r0, c0 }, &stream(n0, 1000 + @as(u64, k), 2.0));
        if (k != c.skip) try common.grad(ctx, &w1, p16, common.M32, .{ r1, c1 }, &stream(n1, 2000 + @as(u64, k), 2.0));
        try common.grad(ctx, &w2, p16, common.V32, .{5}, &stream(5, 3000 + @as(u64, k), 2.0));
        if (c.fb2d) try common.grad(ctx, &w3, p16, common.M32, .{ 2, 3 }, &stream(6, 4000 + @as(u64, k), 2.0));
        if (c.clip > 0) _ = try opt.clipGradNorm(ctx, c.clip);
        try opt.step(ctx);
        opt.zeroGrad();
        try out.print("step {d}\n", .{k});
        try printSlots(opt.slots.items, "m", out);
        try printSlots(opt.fallback_slots.items, "f", out);
        if (k == c.steps / 2 or k == c.steps) try printState(&opt, a, k, out);
    }
}

pub fn main(init: std.process.Init) !void {
    const a = std.heap.page_allocator;
    var buf: [1 << 16]u8 = undefined;
    var fw = std.Io.File.stdout().writer(init.io, &buf);
    const out = &fw.interface;
    var ctx: Ctx = undefined;
    ctx.init(a);
    defer ctx.deinit();
    try out.writeAll("# Fucina 0.2.0 optim.Apollo, scalar backend; generator tests/data/fucina_gen/gen_apollo.zig\n");
    for (cases) |line| {
        const c = try parse(line);
        try out.print("case {s}\n", .{line});
        if (c.big) {
            try run(.none, 300, 130, 40, 900, &ctx, a, &c, out);
            continue;
        }
        switch (c.p16) {
            .none => try run(.none, 6, 4, 3, 7, &ctx, a, &c, out),
            .bf16 => try run(.bf16, 6, 4, 3, 7, &ctx, a, &c, out),
            .f16 => try run(.f16, 6, 4, 3, 7, &ctx, a, &c, out),
        }
    }
    try out.flush();
}
