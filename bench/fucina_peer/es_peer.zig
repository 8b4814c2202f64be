//! Fucina's own es.Trainer on the shape bench_es measures (16M f32 parameters, population 32):
//! PHASE 0 sets up only, 1 adds 5 perturb+restore pairs, 2 adds 5 updates. run_es_peer.sh
//! times the three builds and subtracts the set-up (Zig 0.16's timers moved to std.Io, and a
//! whole-process time needs no API of Fucina's beyond the trainer's).
const std = @import("std");
const fucina = @import("fucina");
const phase = @import("phase.zig").phase;

pub fn main() !void {
    const a = std.heap.page_allocator;
    var ctx: fucina.ExecContext = undefined;
    ctx.init(a);
    defer ctx.deinit();
    const n: usize = 16 << 20;
    const vals = try a.alloc(f32, n);
    for (vals, 0..) |*v, i| v.* = @as(f32, @floatFromInt(i % 1000)) * 0.001;
    var theta = try fucina.Tensor(.{.n}).fromSlice(&ctx, .{n}, vals);
    defer theta.deinit();
    var t = try fucina.es.Trainer.init(a, .{ .sigma = 0.01, .population = 32, .seed = 7 });
    defer t.deinit();
    try t.addParamNamed(&theta, "p");
    var rewards: [32]f32 = undefined;
    for (&rewards, 0..) |*r, i| r.* = @as(f32, @floatFromInt(i)) * 0.1;
    for (0..5) |k| {
        if (phase == 1) {
            try t.perturb(&ctx, k);
            try t.restore(&ctx, k);
        } else if (phase == 2) {
            _ = try t.update(&ctx, &rewards);
        }
    }
}
