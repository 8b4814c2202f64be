//! Writes optimizer state frames made by Fucina's own optimizers (its `optim` module):
//! each case builds an optimizer with Fucina's constructors, registers small fixed
//! parameters, takes two steps with fixed gradients delivered through Fucina's autograd
//! (loss = sum(w * c), so dL/dw = c), and prints the bytes `saveState` (or `saveTensors`)
//! writes. Our code only picks the arguments; every byte comes from Fucina.
//!
//!   fucina_frames NAME     raw frame bytes on stdout (run_frames.sh lists the names)
const std = @import("std");
const fucina = @import("fucina");
const optim = fucina.optim;
const Tensor = fucina.Tensor;
const Ctx = fucina.ExecContext;
const common = @import("common.zig");
const w6 = common.w6;
const g6 = common.g6;
const w12 = common.w12;
const g12 = common.g12;
const b3 = common.b3;
const gb3 = common.gb3;

const M = common.M32;
const V = common.V32;
const M16 = Tensor(.{ .dtype = .bf16, .tags = .{ .out, .in } });
const V16 = Tensor(.{ .dtype = .bf16, .tags = .{.out} });
const MH = Tensor(.{ .dtype = .f16, .tags = .{ .out, .in } });

const grad32 = common.grad32;
const grad16 = common.grad16;
const bf16s = common.Types(.bf16).narrow;

/// Two steps over: w [2,3] named "w" (f32), b [3] unnamed (f32), and, when `with16`, a
/// bf16 [2,3] named "w16".
fn runMoment(comptime O: type, ctx: *Ctx, a: std.mem.Allocator, cfg: anytype, with16: bool, out: *std.Io.Writer) !void {
    var opt = O.init(a, cfg);
    defer opt.deinit();
    var w = try M.variableFromSlice(ctx, .{ 2, 3 }, &w6);
    defer w.deinit();
    var b = try V.variableFromSlice(ctx, .{3}, &b3);
    defer b.deinit();
    var h = try M16.variableFromSlice(ctx, .{ 2, 3 }, &bf16s(6, w6));
    defer h.deinit();
    try opt.addParamNamed(&w, "w");
    try opt.addParam(&b);
    if (with16) try opt.addParamNamed(&h, "w16");
    for (0..2) |s| {
        try grad32(ctx, &w, M, .{ 2, 3 }, &g6[s]);
        try grad32(ctx, &b, V, .{3}, &gb3[s]);
        if (with16) try grad16(ctx, &h, M, .{ 2, 3 }, &g6[1 - s]);
        try opt.step(ctx);
        opt.zeroGrad();
    }
    try opt.saveState(out);
}

/// SGD with an f16 param when `with16` (the f16 arm of the master record).
fn runSgd(ctx: *Ctx, a: std.mem.Allocator, cfg: optim.SgdConfig, with16: bool, out: *std.Io.Writer) !void {
    var opt = optim.SGD.init(a, cfg);
    defer opt.deinit();
    var w = try M.variableFromSlice(ctx, .{ 2, 3 }, &w6);
    defer w.deinit();
    var b = try V.variableFromSlice(ctx, .{3}, &b3);
    defer b.deinit();
    var hv: [6]f16 = undefined;
    for (w6, 0..) |v, i| hv[i] = @floatCast(v);
    var h = try MH.variableFromSlice(ctx, .{ 2, 3 }, &hv);
    defer h.deinit();
    try opt.addParam(&w);
    try opt.addParamNamed(&b, "bias");
    if (with16) try opt.addParam(&h);
    for (0..2) |s| {
        try grad32(ctx, &w, M, .{ 2, 3 }, &g6[s]);
        try grad32(ctx, &b, V, .{3}, &gb3[s]);
        if (with16) try grad16(ctx, &h, M, .{ 2, 3 }, &g6[1 - s]);
        try opt.step(ctx);
        opt.zeroGrad();
    }
    try opt.saveState(out);
}

/// Muon: w [2,3] and t [4,3] on the Newton-Schulz path, b [3] on the fallback by rank,
/// e [2,3] routed to the fallback explicitly, and a bf16 [2,3] when `with16`.
fn runMuon(ctx: *Ctx, a: std.mem.Allocator, cfg: optim.MuonConfig, with16: bool, out: *std.Io.Writer) !void {
    var opt = optim.Muon.init(a, cfg);
    defer opt.deinit();
    var w = try M.variableFromSlice(ctx, .{ 2, 3 }, &w6);
    defer w.deinit();
    var t = try M.variableFromSlice(ctx, .{ 4, 3 }, &w12);
    defer t.deinit();
    var b = try V.variableFromSlice(ctx, .{3}, &b3);
    defer b.deinit();
    var e = try M.variableFromSlice(ctx, .{ 3, 2 }, &w6);
    defer e.deinit();
    var h = try M16.variableFromSlice(ctx, .{ 2, 3 }, &bf16s(6, w6));
    defer h.deinit();
    try opt.addParamNamed(&w, "w");
    try opt.addParam(&t);
    try opt.addParam(&b);
    try opt.addFallbackParam(&e);
    if (with16) try opt.addParamNamed(&h, "w16");
    for (0..2) |s| {
        try grad32(ctx, &w, M, .{ 2, 3 }, &g6[s]);
        try grad32(ctx, &t, M, .{ 4, 3 }, &g12[s]);
        try grad32(ctx, &b, V, .{3}, &gb3[s]);
        try grad32(ctx, &e, M, .{ 3, 2 }, &g6[1 - s]);
        if (with16) try grad16(ctx, &h, M, .{ 2, 3 }, &g6[1 - s]);
        try opt.step(ctx);
        opt.zeroGrad();
    }
    try opt.saveState(out);
}

/// APOLLO: tall t [4,3] and wide x [2,6] on the rank path, b [3] on the legacy-AdamW
/// fallback, a bf16 bias there when `with16`.
fn runApollo(ctx: *Ctx, a: std.mem.Allocator, cfg: optim.ApolloConfig, with16: bool, out: *std.Io.Writer) !void {
    var opt = optim.Apollo.init(a, cfg);
    defer opt.deinit();
    var t = try M.variableFromSlice(ctx, .{ 4, 3 }, &w12);
    defer t.deinit();
    var x = try M.variableFromSlice(ctx, .{ 2, 6 }, &w12);
    defer x.deinit();
    var b = try V.variableFromSlice(ctx, .{3}, &b3);
    defer b.deinit();
    var hb = try V16.variableFromSlice(ctx, .{3}, &bf16s(3, b3));
    defer hb.deinit();
    try opt.addParamNamed(&t, "tall");
    try opt.addParam(&x);
    try opt.addParam(&b);
    if (with16) try opt.addParamNamed(&hb, "b16");
    for (0..2) |s| {
        try grad32(ctx, &t, M, .{ 4, 3 }, &g12[s]);
        try grad32(ctx, &x, M, .{ 2, 6 }, &g12[1 - s]);
        try grad32(ctx, &b, V, .{3}, &gb3[s]);
        if (with16) try grad16(ctx, &hb, V, .{3}, &gb3[1 - s]);
        try opt.step(ctx);
        opt.zeroGrad();
    }
    try opt.saveState(out);
}

/// A set of AdamW (w), SGD with momentum (b) and Muon (t), stepped through the set.
fn runSet(ctx: *Ctx, a: std.mem.Allocator, out: *std.Io.Writer) !void {
    var opt_w = optim.AdamW.init(a, .{ .lr = 0.05, .state_dtype = .bf16 });
    defer opt_w.deinit();
    var opt_b = optim.SGD.init(a, .{ .lr = 0.05, .momentum = 0.9 });
    defer opt_b.deinit();
    var opt_m = optim.Muon.init(a, .{ .lr = 0.02 });
    defer opt_m.deinit();
    var w = try M.variableFromSlice(ctx, .{ 2, 3 }, &w6);
    defer w.deinit();
    var b = try V.variableFromSlice(ctx, .{3}, &b3);
    defer b.deinit();
    var t = try M.variableFromSlice(ctx, .{ 4, 3 }, &w12);
    defer t.deinit();
    try opt_w.addParamNamed(&w, "w");
    try opt_b.addParam(&b);
    try opt_m.addParamNamed(&t, "t");
    var set = optim.OptimizerSet.init(a);
    defer set.deinit();
    try set.add(&opt_w);
    try set.add(&opt_b);
    try set.add(&opt_m);
    for (0..2) |s| {
        try grad32(ctx, &w, M, .{ 2, 3 }, &g6[s]);
        try grad32(ctx, &b, V, .{3}, &gb3[s]);
        try grad32(ctx, &t, M, .{ 4, 3 }, &g12[s]);
        _ = try set.clipGradNorm(ctx, 1.0);
        try set.step(ctx);
        set.zeroGrad();
    }
    try set.saveState(out);
}

fn runTensors(ctx: *Ctx, out: *std.Io.Writer) !void {
    var w = try M.variableFromSlice(ctx, .{ 2, 3 }, &w6);
    defer w.deinit();
    var b = try V.variableFromSlice(ctx, .{3}, &b3);
    defer b.deinit();
    var t = try M.fromSlice(ctx, .{ 4, 3 }, &w12);
    defer t.deinit();
    try optim.saveTensors(out, .{ &w, &b, &t });
}

pub fn main(init: std.process.Init) !void {
    const a = std.heap.page_allocator;
    const args = try init.minimal.args.toSlice(init.arena.allocator());
    var buf: [1 << 16]u8 = undefined;
    var fw = std.Io.File.stdout().writer(init.io, &buf);
    const out = &fw.interface;
    var ctx: Ctx = undefined;
    ctx.init(a);
    defer ctx.deinit();
    const what = if (args.len > 1) args[1] else "";
    const eq = struct {
        fn f(x: []const u8, y: []const u8) bool {
            return std.mem.eql(u8, x, y);
        }
    }.f;
    if (eq(what, "adamw_v3")) {
        try runMoment(optim.AdamW, &ctx, a, optim.AdamWConfig{ .lr = 0.1, .weight_decay = 0.1 }, false, out);
    } else if (eq(what, "adamw_v4")) {
        try runMoment(optim.AdamW, &ctx, a, optim.AdamWConfig{ .lr = 0.1, .state_dtype = .bf16 }, false, out);
    } else if (eq(what, "adamw_v5")) {
        try runMoment(optim.AdamW, &ctx, a, optim.AdamWConfig{ .lr = 0.01, .state_dtype = .bf16, .second_moment_dtype = .bf16 }, true, out);
    } else if (eq(what, "adam_v3")) {
        try runMoment(optim.Adam, &ctx, a, optim.AdamConfig{ .lr = 0.1, .weight_decay = 0.05 }, false, out);
    } else if (eq(what, "adam_v4")) {
        try runMoment(optim.Adam, &ctx, a, optim.AdamConfig{ .lr = 0.1, .second_moment_dtype = .bf16 }, false, out);
    } else if (eq(what, "adam_v5")) {
        try runMoment(optim.Adam, &ctx, a, optim.AdamConfig{ .lr = 0.01 }, true, out);
    } else if (eq(what, "sgd_plain_v3")) {
        try runSgd(&ctx, a, .{ .lr = 0.1 }, false, out);
    } else if (eq(what, "sgd_momentum_v3")) {
        try runSgd(&ctx, a, .{ .lr = 0.1, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.05 }, false, out);
    } else if (eq(what, "sgd_nesterov_v4")) {
        try runSgd(&ctx, a, .{ .lr = 0.1, .momentum = 0.9, .nesterov = true, .state_dtype = .bf16 }, false, out);
    } else if (eq(what, "sgd_plain_v5")) {
        try runSgd(&ctx, a, .{ .lr = 0.1 }, true, out);
    } else if (eq(what, "sgd_momentum_v5")) {
        try runSgd(&ctx, a, .{ .lr = 0.1, .momentum = 0.5 }, true, out);
    } else if (eq(what, "muon_v3")) {
        try runMuon(&ctx, a, .{ .lr = 0.02, .weight_decay = 0.01 }, false, out);
    } else if (eq(what, "muon_v4")) {
        try runMuon(&ctx, a, .{ .lr = 0.02, .nesterov = false, .ns_steps = 3, .scale = .match_rms_adamw, .state_dtype = .bf16 }, false, out);
    } else if (eq(what, "muon_v5")) {
        try runMuon(&ctx, a, .{ .lr = 0.02, .fallback = .{ .lr = 3e-4, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-10, .weight_decay = 0, .state_dtype = .bf16 } }, true, out);
    } else if (eq(what, "apollo_v3")) {
        try runApollo(&ctx, a, .{ .lr = 0.02, .rank = 2, .update_proj_gap = 1, .weight_decay = 0.1, .seed = 7 }, false, out);
    } else if (eq(what, "apollo_mini_v3")) {
        var cfg = optim.ApolloConfig.mini();
        cfg.scale_front = true;
        cfg.disable_norm_growth_limiter = true;
        cfg.correct_bias = false;
        try runApollo(&ctx, a, cfg, false, out);
    } else if (eq(what, "apollo_v5")) {
        try runApollo(&ctx, a, .{ .lr = 0.02, .rank = 2 }, true, out);
    } else if (eq(what, "set_v3")) {
        try runSet(&ctx, a, out);
    } else if (eq(what, "tensors")) {
        try runTensors(&ctx, out);
    } else {
        std.debug.print("usage: fucina_frames NAME (see run_frames.sh)\n", .{});
        std.process.exit(2);
    }
    try out.flush();
}
