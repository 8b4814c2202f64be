//! Writes what Fucina's OptimizerSet saves after two steps of a set with param groups, a
//! global clip and a warmup-cosine schedule attached to every member's lr: AdamW with decay
//! on w [2,3] ("w"), AdamW without decay on b [3] (unnamed), SGD with nesterov momentum on
//! t [4,3] ("t"). Each step: sched.apply(warmupCosineFactor(s, 4, 1, 0.1)), clipGradNorm(0.5),
//! step. Gradients arrive through Fucina's autograd (loss = sum(w * c), so dL/dw = c).
//!
//!   fucina_gen set_sched         the set's saveState bytes (FZO3)
//!   fucina_gen set_sched_params  the parameters after the steps, saveTensors (FZT1: w, b, t)
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
const grad32 = common.grad32;

fn run(ctx: *Ctx, a: std.mem.Allocator, params: bool, out: *std.Io.Writer) !void {
    var opt_w = optim.AdamW.init(a, .{ .lr = 0.05, .weight_decay = 0.1 });
    defer opt_w.deinit();
    var opt_b = optim.AdamW.init(a, .{ .lr = 0.02, .weight_decay = 0 });
    defer opt_b.deinit();
    var opt_t = optim.SGD.init(a, .{ .lr = 0.1, .momentum = 0.9, .nesterov = true });
    defer opt_t.deinit();
    var w = try M.variableFromSlice(ctx, .{ 2, 3 }, &w6);
    defer w.deinit();
    var b = try V.variableFromSlice(ctx, .{3}, &b3);
    defer b.deinit();
    var t = try M.variableFromSlice(ctx, .{ 4, 3 }, &w12);
    defer t.deinit();
    try opt_w.addParamNamed(&w, "w");
    try opt_b.addParam(&b);
    try opt_t.addParamNamed(&t, "t");
    var set = optim.OptimizerSet.init(a);
    defer set.deinit();
    try set.add(&opt_w);
    try set.add(&opt_b);
    try set.add(&opt_t);
    var sched = optim.LrSchedule.init(a);
    defer sched.deinit();
    try sched.attach(&opt_w.config.lr);
    try sched.attach(&opt_b.config.lr);
    try sched.attach(&opt_t.config.lr);
    for (0..2) |s| {
        try grad32(ctx, &w, M, .{ 2, 3 }, &g6[s]);
        try grad32(ctx, &b, V, .{3}, &gb3[s]);
        try grad32(ctx, &t, M, .{ 4, 3 }, &g12[s]);
        sched.apply(optim.warmupCosineFactor(s, 4, 1, 0.1));
        _ = try set.clipGradNorm(ctx, 0.5);
        try set.step(ctx);
        set.zeroGrad();
    }
    if (params) {
        try optim.saveTensors(out, .{ &w, &b, &t });
    } else {
        try set.saveState(out);
    }
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
    if (std.mem.eql(u8, what, "set_sched")) {
        try run(&ctx, a, false, out);
    } else if (std.mem.eql(u8, what, "set_sched_params")) {
        try run(&ctx, a, true, out);
    } else {
        std.debug.print("usage: fucina_gen set_sched|set_sched_params (see run_set.sh)\n", .{});
        std.process.exit(2);
    }
    try out.flush();
}
