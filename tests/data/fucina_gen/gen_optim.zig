//! Writes tests/data/golden/fucina_optim.txt: the torch_optim.txt trajectories (generator
//! tests/data/torch_gen/gen_optim.py) run by Fucina's own SGD, Adam and AdamW, so that
//! tests/cpu/test_optim.cpp can require forgia to give the same bits.
//!
//! Each case line below is copied from torch_optim.txt and parsed here into Fucina's config
//! structs (decimal fields through std.fmt.parseFloat(f32), correctly rounded like the test's
//! std::stof). Inputs are the integer-exact splitmix64 streams of the torch generator: two
//! parameters [7] and [4, 5]; parameter j starts from stream 100 + j and its gradient at step
//! k is stream 1000 * (j + 1) + k, both scale 2. Gradients arrive through Fucina's autograd as
//! the backward of sum(w * c) (dL/dw = c exactly; a 16-bit parameter is widened first, its
//! gradient is f32). At a skipped step parameter 1 gets no gradient at all, so Fucina skips
//! it. clip > 0 calls clipGradNorm(clip) before each step. 16-bit parameters are built from
//! f32ToBf16 / @floatCast of the stream values and stepped through Fucina's f32 masters.
//! Every case runs twice: as given, and with bf16 state (state_dtype, and for Adam/AdamW
//! second_moment_dtype), the second marked `state=bf16` in its case line.
//! Output: `p<j>` the final f32 bits (the master of a 16-bit parameter), `p<j>_16` the 16-bit
//! parameter's bits. Our code only picks the arguments; every update is Fucina's.
const std = @import("std");
const fucina = @import("fucina");
const optim = fucina.optim;
const Tensor = fucina.Tensor;
const Ctx = fucina.ExecContext;
const common = @import("common.zig");
const P16 = common.P16;
const stream = common.stream;

const cases = [_][]const u8{
    "sgd lr=0.1 steps=25 clip=0 skip=- p16=-",
    "sgd lr=0.05 momentum=0.9 dampening=0.1 weight_decay=0.05 steps=25 clip=0 skip=4,9 p16=-",
    "sgd lr=0.05 momentum=0.9 nesterov=1 weight_decay=0.01 steps=25 clip=0 skip=- p16=-",
    "adam lr=0.01 weight_decay=0.1 steps=25 clip=0 skip=3,4,17 p16=-",
    "adamw lr=0.01 weight_decay=0.1 steps=25 clip=0 skip=- p16=-",
    "adamw lr=0.003 weight_decay=0 beta1=0.8 beta2=0.95 eps=1e-6 steps=25 clip=0 skip=2 p16=-",
    "adamw lr=0.01 weight_decay=0.1 steps=25 clip=1.0 skip=- p16=-",
    "sgd lr=0.05 momentum=0.9 dampening=0.1 weight_decay=0.05 steps=25 clip=0.5 skip=- p16=-",
    "adamw lr=0.01 weight_decay=0.1 steps=25 clip=0 skip=- p16=bfloat16",
    "adam lr=0.01 weight_decay=0.1 steps=25 clip=0 skip=- p16=float16",
    "sgd lr=0.05 momentum=0.9 nesterov=1 weight_decay=0.01 steps=25 clip=0 skip=- p16=bfloat16",
};

const Case = struct {
    kind: []const u8 = "",
    lr: ?f32 = null,
    momentum: ?f32 = null,
    dampening: ?f32 = null,
    weight_decay: ?f32 = null,
    nesterov: bool = false,
    beta1: ?f32 = null,
    beta2: ?f32 = null,
    eps: ?f32 = null,
    steps: u32 = 0,
    clip: f32 = 0,
    skip: [8]u32 = undefined,
    n_skip: usize = 0,
    p16: P16 = .none,
    bf16_state: bool = false,

    fn skipped(c: *const Case, k: u32) bool {
        for (c.skip[0..c.n_skip]) |s| if (s == k) return true;
        return false;
    }
};

fn parse(line: []const u8) !Case {
    var c = Case{ .kind = common.kind(line) };
    var it = common.Fields.init(line);
    while (it.next()) |f| {
        const k = f.k;
        const v = f.v;
        const eql = std.mem.eql;
        if (eql(u8, k, "lr")) c.lr = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "momentum")) c.momentum = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "dampening")) c.dampening = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "weight_decay")) c.weight_decay = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "nesterov")) c.nesterov = eql(u8, v, "1");
        if (eql(u8, k, "beta1")) c.beta1 = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "beta2")) c.beta2 = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "eps")) c.eps = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "steps")) c.steps = try std.fmt.parseInt(u32, v, 10);
        if (eql(u8, k, "clip")) c.clip = try std.fmt.parseFloat(f32, v);
        if (eql(u8, k, "skip") and !eql(u8, v, "-")) {
            var sk = std.mem.tokenizeScalar(u8, v, ',');
            while (sk.next()) |x| {
                c.skip[c.n_skip] = try std.fmt.parseInt(u32, x, 10);
                c.n_skip += 1;
            }
        }
        if (eql(u8, k, "p16")) c.p16 = if (eql(u8, v, "bfloat16")) .bf16 else if (eql(u8, v, "float16")) .f16 else .none;
    }
    return c;
}

fn printParams(opt: anytype, out: *std.Io.Writer) !void {
    for (opt.slots.items, 0..) |*slot, j| {
        const p = &slot.param;
        try out.print("p{d}", .{j});
        try common.writeF32Bits(out, common.paramF32(p));
        try out.writeAll("\n");
        const bytes = common.param16(p) orelse continue;
        try out.print("p{d}_16", .{j});
        try common.writeU16Bits(out, bytes);
        try out.writeAll("\n");
    }
}

fn run(comptime O: type, comptime p16: P16, ctx: *Ctx, a: std.mem.Allocator, cfg: anytype, c: *const Case, out: *std.Io.Writer) !void {
    const T = common.Types(p16);
    var opt = O.init(a, cfg);
    defer opt.deinit();
    var w0 = try T.V.variableFromSlice(ctx, .{7}, &T.narrow(7, stream(7, 100, 2.0)));
    defer w0.deinit();
    var w1 = try T.M.variableFromSlice(ctx, .{ 4, 5 }, &T.narrow(20, stream(20, 101, 2.0)));
    defer w1.deinit();
    try opt.addParam(&w0);
    try opt.addParam(&w1);
    var k: u32 = 1;
    while (k <= c.steps) : (k += 1) {
        try common.grad(ctx, &w0, p16, common.V32, .{7}, &stream(7, 1000 + @as(u64, k), 2.0));
        if (!c.skipped(k)) try common.grad(ctx, &w1, p16, common.M32, .{ 4, 5 }, &stream(20, 2000 + @as(u64, k), 2.0));
        if (c.clip > 0) _ = try opt.clipGradNorm(ctx, c.clip);
        try opt.step(ctx);
        opt.zeroGrad();
    }
    try printParams(&opt, out);
}

fn runKind(comptime p16: P16, ctx: *Ctx, a: std.mem.Allocator, c: *const Case, out: *std.Io.Writer) !void {
    const st: optim.StateDType = if (c.bf16_state) .bf16 else .f32;
    if (std.mem.eql(u8, c.kind, "sgd")) {
        var cfg = optim.SgdConfig{ .nesterov = c.nesterov, .state_dtype = st };
        if (c.lr) |v| cfg.lr = v;
        if (c.momentum) |v| cfg.momentum = v;
        if (c.dampening) |v| cfg.dampening = v;
        if (c.weight_decay) |v| cfg.weight_decay = v;
        return run(optim.SGD, p16, ctx, a, cfg, c, out);
    }
    inline for (.{ .{ "adam", optim.Adam, optim.AdamConfig }, .{ "adamw", optim.AdamW, optim.AdamWConfig } }) |k| {
        if (std.mem.eql(u8, c.kind, k[0])) {
            var cfg = k[2]{ .state_dtype = st, .second_moment_dtype = st };
            if (c.lr) |v| cfg.lr = v;
            if (c.weight_decay) |v| cfg.weight_decay = v;
            if (c.beta1) |v| cfg.beta1 = v;
            if (c.beta2) |v| cfg.beta2 = v;
            if (c.eps) |v| cfg.eps = v;
            return run(k[1], p16, ctx, a, cfg, c, out);
        }
    }
    return error.UnknownKind;
}

pub fn main(init: std.process.Init) !void {
    const a = std.heap.page_allocator;
    var buf: [1 << 16]u8 = undefined;
    var fw = std.Io.File.stdout().writer(init.io, &buf);
    const out = &fw.interface;
    var ctx: Ctx = undefined;
    ctx.init(a);
    defer ctx.deinit();
    try out.writeAll("# Fucina 0.2.0 optim (SGD/Adam/AdamW); generator tests/data/fucina_gen/gen_optim.zig\n");
    for ([_]bool{ false, true }) |bf16_state| {
        for (cases) |line| {
            var c = try parse(line);
            c.bf16_state = bf16_state;
            try out.print("case {s}{s}\n", .{ line, if (bf16_state) " state=bf16" else "" });
            switch (c.p16) {
                .none => try runKind(.none, &ctx, a, &c, out),
                .bf16 => try runKind(.bf16, &ctx, a, &c, out),
                .f16 => try runKind(.f16, &ctx, a, &c, out),
            }
        }
    }
    try out.flush();
}
