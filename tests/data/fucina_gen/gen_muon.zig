//! Writes tests/data/golden/fucina_muon.txt: Muon trajectories run by Fucina's own
//! optim.Muon (built with -Dbackend=scalar, so its matmuls are the plain scalar loops that
//! forgia's FG_GEMM_EXACT reproduces), so that tests/cpu/test_optim_muon.cpp can require
//! forgia to give the same bits after every step, and the same saveState bytes.
//!
//! Parameters (registration order, all named): w [6,4] (tall; [300,130] with big=1),
//! x [3,5] (wide), c [2,3,4] (3-D, viewed 2 x 12), b [5] (1-D, routed to the fallback by
//! rank), e [4,3] (routed with addFallbackParamNamed). Parameter j starts from the splitmix64
//! stream 100 + j and its gradient at step k is stream 1000 * (j + 1) + k, both scale 2
//! (values integer-exact, as gen_optim.zig). Gradients arrive through Fucina's autograd as the
//! backward of sum(w * c). With p16, every parameter is that 16-bit dtype (Fucina steps it
//! through its f32 master). `skip=k` gives x no gradient at step k; clip > 0 calls
//! clipGradNorm(clip) before each step.
//!
//! Output per case: `case <line>`, then for each step k `s<k> <name> <f32 hex...>` (the
//! master of a 16-bit parameter) and `s<k> <name>_16 <u16 hex...>`; a tensor of more than 64
//! elements prints `fnv=<FNV-1a-64 of its little-endian bytes>` instead of its values.
//! `state<k> <hex>` are the bytes of saveState after steps 3 and `steps` (beyond 4096 bytes,
//! `state<k> len=<bytes> fnv=<hash>`). Our code only picks
//! the arguments; every update is Fucina's.
const std = @import("std");
const fucina = @import("fucina");
const optim = fucina.optim;
const Tensor = fucina.Tensor;
const Ctx = fucina.ExecContext;
const common = @import("common.zig");
const P16 = common.P16;
const stream = common.streamAlloc;

const cases = [_][]const u8{
    "muon steps=6",
    "muon nesterov=0 weight_decay=0.1 steps=6",
    "muon scale=match_rms_adamw weight_decay=0.01 lr=0.01 steps=6",
    "muon momentum=0.3 ns_steps=3 weight_decay=0.05 fb_lr=0.01 fb_wd=0.1 steps=6",
    "muon momentum=0.3 nesterov=0 scale=match_rms_adamw steps=6",
    "muon state=bf16 fb_state=bf16 weight_decay=0.01 steps=6",
    "muon clip=0.5 skip=2 weight_decay=0.01 steps=6",
    "muon p16=bfloat16 weight_decay=0.01 steps=6",
    "muon p16=float16 state=bf16 steps=6",
    "muon big=1 weight_decay=0.01 steps=4",
};

const Case = struct {
    lr: ?f32 = null,
    momentum: ?f32 = null,
    weight_decay: ?f32 = null,
    nesterov: bool = true,
    ns_steps: ?u32 = null,
    match_rms: bool = false,
    bf16_state: bool = false,
    fb_bf16_state: bool = false,
    fb_lr: ?f32 = null,
    fb_wd: ?f32 = null,
    steps: u32 = 0,
    clip: f32 = 0,
    skip: u32 = 0,
    p16: P16 = .none,
    big: bool = false,
};

fn parse(line: []const u8) !Case {
    var c = Case{};
    var it = common.Fields.init(line);
    while (it.next()) |f| {
        const k = f.k;
        const v = f.v;
        const eql = std.mem.eql;
        if (eql(u8, k, "lr")) c.lr = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "momentum")) c.momentum = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "weight_decay")) c.weight_decay = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "nesterov")) c.nesterov = eql(u8, v, "1");
        if (eql(u8, k, "ns_steps")) c.ns_steps = try std.fmt.parseInt(u32, v, 10);
        if (eql(u8, k, "scale")) c.match_rms = eql(u8, v, "match_rms_adamw");
        if (eql(u8, k, "state")) c.bf16_state = eql(u8, v, "bf16");
        if (eql(u8, k, "fb_state")) c.fb_bf16_state = eql(u8, v, "bf16");
        if (eql(u8, k, "fb_lr")) c.fb_lr = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "fb_wd")) c.fb_wd = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "steps")) c.steps = try std.fmt.parseInt(u32, v, 10);
        if (eql(u8, k, "clip")) c.clip = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "skip")) c.skip = try std.fmt.parseInt(u32, v, 10);
        if (eql(u8, k, "big")) c.big = eql(u8, v, "1");
        if (eql(u8, k, "p16")) c.p16 = if (eql(u8, v, "bfloat16")) .bf16 else if (eql(u8, v, "float16")) .f16 else .none;
    }
    return c;
}

fn printSlot(out: *std.Io.Writer, k: u32, p: anytype) !void {
    const name = p.name.?;
    const f = common.paramF32(p);
    try out.print("s{d} {s}", .{ k, name });
    if (f.len > 64) {
        try common.writeFnv(out, std.mem.sliceAsBytes(f));
    } else {
        try common.writeF32Bits(out, f);
    }
    try out.writeAll("\n");
    const bytes = common.param16(p) orelse return;
    try out.print("s{d} {s}_16", .{ k, name });
    if (bytes.len > 128) {
        try common.writeFnv(out, bytes);
    } else {
        try common.writeU16Bits(out, bytes);
    }
    try out.writeAll("\n");
}

fn printState(a: std.mem.Allocator, opt: *const optim.Muon, k: u32, out: *std.Io.Writer) !void {
    const bytes = try common.savedState(a, opt);
    defer a.free(bytes);
    if (bytes.len > 4096) {
        try out.print("state{d} len={d}", .{ k, bytes.len });
        try common.writeFnv(out, bytes);
    } else {
        try out.print("state{d} ", .{k});
        try common.writeHexBytes(out, bytes);
    }
    try out.writeAll("\n");
}

fn run(comptime p16: P16, ctx: *Ctx, a: std.mem.Allocator, cfg: optim.MuonConfig, c: *const Case, out: *std.Io.Writer) !void {
    const T = common.Types(p16);
    var opt = optim.Muon.init(a, cfg);
    defer opt.deinit();
    const wr: usize = if (c.big) 300 else 6;
    const wc: usize = if (c.big) 130 else 4;
    var w = try T.M.variableFromSlice(ctx, .{ wr, wc }, try T.narrowAlloc(a, try stream(a, wr * wc, 100, 2.0)));
    defer w.deinit();
    var x = try T.M.variableFromSlice(ctx, .{ 3, 5 }, try T.narrowAlloc(a, try stream(a, 15, 101, 2.0)));
    defer x.deinit();
    var c3 = try T.C.variableFromSlice(ctx, .{ 2, 3, 4 }, try T.narrowAlloc(a, try stream(a, 24, 102, 2.0)));
    defer c3.deinit();
    var b = try T.V.variableFromSlice(ctx, .{5}, try T.narrowAlloc(a, try stream(a, 5, 103, 2.0)));
    defer b.deinit();
    var e = try T.M.variableFromSlice(ctx, .{ 4, 3 }, try T.narrowAlloc(a, try stream(a, 12, 104, 2.0)));
    defer e.deinit();
    try opt.addParamNamed(&w, "w");
    try opt.addParamNamed(&x, "x");
    try opt.addParamNamed(&c3, "c");
    try opt.addParamNamed(&b, "b");
    try opt.addFallbackParamNamed(&e, "e");
    const M32 = common.M32;
    const C32 = common.C32;
    const V32 = common.V32;
    var k: u32 = 1;
    while (k <= c.steps) : (k += 1) {
        try common.grad(ctx, &w, p16, M32, .{ wr, wc }, try stream(a, wr * wc, 1000 + @as(u64, k), 2.0));
        if (k != c.skip) try common.grad(ctx, &x, p16, M32, .{ 3, 5 }, try stream(a, 15, 2000 + @as(u64, k), 2.0));
        try common.grad(ctx, &c3, p16, C32, .{ 2, 3, 4 }, try stream(a, 24, 3000 + @as(u64, k), 2.0));
        try common.grad(ctx, &b, p16, V32, .{5}, try stream(a, 5, 4000 + @as(u64, k), 2.0));
        try common.grad(ctx, &e, p16, M32, .{ 4, 3 }, try stream(a, 12, 5000 + @as(u64, k), 2.0));
        if (c.clip > 0) _ = try opt.clipGradNorm(ctx, c.clip);
        try opt.step(ctx);
        opt.zeroGrad();
        for (opt.slots.items) |*slot| try printSlot(out, k, &slot.param);
        for (opt.fallback.slots.items) |*slot| try printSlot(out, k, &slot.param);
        if (k == 3 or k == c.steps) try printState(a, &opt, k, out);
    }
}

pub fn main(init: std.process.Init) !void {
    var arena = std.heap.ArenaAllocator.init(std.heap.page_allocator);
    defer arena.deinit();
    const a = arena.allocator();
    var buf: [1 << 16]u8 = undefined;
    var fw = std.Io.File.stdout().writer(init.io, &buf);
    const out = &fw.interface;
    var ctx: Ctx = undefined;
    ctx.init(std.heap.page_allocator);
    defer ctx.deinit();
    try out.writeAll("# Fucina 0.2.0 optim.Muon, scalar backend; generator tests/data/fucina_gen/gen_muon.zig\n");
    for (cases) |line| {
        const c = try parse(line);
        var cfg = optim.MuonConfig{
            .nesterov = c.nesterov,
            .scale = if (c.match_rms) .match_rms_adamw else .spectral,
            .state_dtype = if (c.bf16_state) .bf16 else .f32,
        };
        if (c.lr) |v| cfg.lr = v;
        if (c.momentum) |v| cfg.momentum = v;
        if (c.weight_decay) |v| cfg.weight_decay = v;
        if (c.ns_steps) |v| cfg.ns_steps = v;
        if (c.fb_lr) |v| cfg.fallback.lr = v;
        if (c.fb_wd) |v| cfg.fallback.weight_decay = v;
        if (c.fb_bf16_state) {
            cfg.fallback.state_dtype = .bf16;
            cfg.fallback.second_moment_dtype = .bf16;
        }
        try out.print("case {s}\n", .{line});
        switch (c.p16) {
            .none => try run(.none, &ctx, a, cfg, &c, out),
            .bf16 => try run(.bf16, &ctx, a, cfg, &c, out),
            .f16 => try run(.f16, &ctx, a, cfg, &c, out),
        }
    }
    try out.flush();
}
