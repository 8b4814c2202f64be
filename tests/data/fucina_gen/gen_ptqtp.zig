//! Prints what Fucina's PTQTP solver (`ptqtp.quantizeMatrix`) makes of deterministic
//! matrices: the packed TQ2_0 bytes of every trit-plane and the matrix diagnostics, for
//! K = 1, 2, 3, the free and the scale-tied fit, a matrix holding NaN and +-inf, an exactly
//! ternary matrix, an all-zero group, scales past f16's range and scales in f16's subnormal
//! range. Only the arguments and the formatting are ours; run_gen.sh ptqtp writes
//! tests/data/golden/fucina_ptqtp.txt, read by tests/cpu/test_ptqtp.cpp.
//!
//! Inputs are rebuilt bit for bit by the test: value i of a case is
//!   kind=uniform  u = ((at(seed, i) >> 40) * 2^-24 - 0.5) * scale        (common.zig stream)
//!   kind=cube     u * u * u (f32, left to right), u as above
//!   kind=ternary  0.5 * (at(seed, i) % 3 - 1)
//! then the edits: `zero_group=G` sets elements [256 G, 256 G + 256) to 0, `nonfinite=1` sets
//! element 5 to NaN, 300 to +inf and 700 to -inf.
//!
//! Lines (f32 and f64 as their bit patterns in hex):
//!   case name=N rows=R cols=C planes=K tie=0|1 kind=K seed=S scale=F32 zero_group=G|-1 nonfinite=0|1
//!        max_iterations=N epsilon=F32      (the options; the others are Fucina's defaults)
//!   input fnv=H                      FNV-1a-64 of the input's little-endian f32 bytes
//!   plane p=P bytes=HEX              (66 bytes a block: qs[64], then d as little-endian f16)
//!   plane p=P fnv=H                  instead of bytes= when a plane is over 4 blocks
//!   stats rel=F64 zero=F64,F64,F64 iters=F64 unconverged=N groups=N
//!   end
const std = @import("std");
const fucina = @import("fucina");
const common = @import("common.zig");
const ptqtp = fucina.ptqtp;
const Ctx = fucina.ExecContext;

const Kind = enum { uniform, cube, ternary };

const Case = struct {
    name: []const u8,
    rows: usize,
    cols: usize,
    planes: u8,
    tie: bool = false,
    kind: Kind = .uniform,
    seed: u64,
    scale: f32 = 0.1,
    zero_group: i64 = -1,
    nonfinite: bool = false,
    max_iterations: usize = 50,
    epsilon: f32 = 1e-4,
};

const cases = [_]Case{
    .{ .name = "k1_small", .rows = 1, .cols = 256, .planes = 1, .seed = 1 },
    .{ .name = "k2_small", .rows = 1, .cols = 256, .planes = 2, .seed = 2 },
    .{ .name = "k3_small", .rows = 1, .cols = 256, .planes = 3, .seed = 3 },
    .{ .name = "k2_tied_small", .rows = 1, .cols = 256, .planes = 2, .tie = true, .seed = 4 },
    .{ .name = "k3_tied_small", .rows = 1, .cols = 256, .planes = 3, .tie = true, .seed = 5 },
    .{ .name = "k1_4x512", .rows = 4, .cols = 512, .planes = 1, .seed = 11, .kind = .cube },
    .{ .name = "k2_4x512", .rows = 4, .cols = 512, .planes = 2, .seed = 12, .kind = .cube },
    .{ .name = "k3_3x768", .rows = 3, .cols = 768, .planes = 3, .seed = 13, .kind = .cube },
    .{ .name = "k2_tied_5x512", .rows = 5, .cols = 512, .planes = 2, .tie = true, .seed = 14, .kind = .cube },
    .{ .name = "k3_tied_3x768", .rows = 3, .cols = 768, .planes = 3, .tie = true, .seed = 15, .kind = .cube },
    .{ .name = "k2_37x1024", .rows = 37, .cols = 1024, .planes = 2, .seed = 16, .scale = 0.04 },
    .{ .name = "k3_19x2048", .rows = 19, .cols = 2048, .planes = 3, .seed = 17, .kind = .cube, .scale = 2.0 },
    .{ .name = "k2_tied_33x1024", .rows = 33, .cols = 1024, .planes = 2, .tie = true, .seed = 18 },
    .{ .name = "k1_nonfinite", .rows = 2, .cols = 512, .planes = 1, .seed = 21, .nonfinite = true },
    .{ .name = "k2_nonfinite", .rows = 2, .cols = 512, .planes = 2, .seed = 22, .nonfinite = true },
    .{ .name = "k3_nonfinite", .rows = 2, .cols = 512, .planes = 3, .seed = 23, .nonfinite = true },
    .{ .name = "k2_tied_nonfinite", .rows = 2, .cols = 512, .planes = 2, .tie = true, .seed = 24, .nonfinite = true },
    .{ .name = "k1_ternary", .rows = 3, .cols = 512, .planes = 1, .seed = 31, .kind = .ternary },
    .{ .name = "k2_ternary", .rows = 3, .cols = 512, .planes = 2, .seed = 32, .kind = .ternary },
    .{ .name = "k3_zero_group", .rows = 2, .cols = 512, .planes = 3, .seed = 41, .zero_group = 1 },
    .{ .name = "k2_tied_zero_group", .rows = 2, .cols = 512, .planes = 2, .tie = true, .seed = 42, .zero_group = 2 },
    .{ .name = "k1_huge", .rows = 1, .cols = 512, .planes = 1, .seed = 51, .scale = 4.0e5 },
    .{ .name = "k2_huge", .rows = 1, .cols = 512, .planes = 2, .seed = 52, .scale = 4.0e5 },
    .{ .name = "k3_tiny", .rows = 1, .cols = 512, .planes = 3, .seed = 53, .scale = 3.0e-6 },
    .{ .name = "k2_tied_tiny", .rows = 1, .cols = 512, .planes = 2, .tie = true, .seed = 54, .scale = 3.0e-6 },
    .{ .name = "k2_maxit2", .rows = 3, .cols = 512, .planes = 2, .seed = 61, .kind = .cube, .max_iterations = 2 },
    .{ .name = "k3_eps0_maxit7", .rows = 2, .cols = 256, .planes = 3, .seed = 62, .max_iterations = 7, .epsilon = 0 },
};

fn input(a: std.mem.Allocator, c: Case) ![]f32 {
    const n = c.rows * c.cols;
    const w = try common.streamAlloc(a, n, c.seed, c.scale);
    switch (c.kind) {
        .uniform => {},
        .cube => for (w) |*v| {
            v.* = v.* * v.* * v.*;
        },
        .ternary => for (w, 0..) |*v, i| {
            const t: f32 = @floatFromInt(@as(i64, @intCast(common.at(c.seed, i) % 3)) - 1);
            v.* = 0.5 * t;
        },
    }
    if (c.zero_group >= 0) @memset(w[@as(usize, @intCast(c.zero_group)) * 256 ..][0..256], 0);
    if (c.nonfinite) {
        w[5] = std.math.nan(f32);
        w[300] = std.math.inf(f32);
        w[700] = -std.math.inf(f32);
    }
    return w;
}

fn f64Bits(x: f64) u64 {
    return @bitCast(x);
}

fn runCase(ctx: *Ctx, a: std.mem.Allocator, c: Case, out: *std.Io.Writer) !void {
    try out.print("case name={s} rows={d} cols={d} planes={d} tie={d} kind={s} seed={d} scale={x:0>8} zero_group={d} nonfinite={d} max_iterations={d} epsilon={x:0>8}\n", .{
        c.name,              c.rows, c.cols, c.planes, @intFromBool(c.tie), @tagName(c.kind), c.seed,
        @as(u32, @bitCast(c.scale)), c.zero_group, @intFromBool(c.nonfinite), c.max_iterations,
        @as(u32, @bitCast(c.epsilon)),
    });
    const w = try input(a, c);
    defer a.free(w);
    try out.print("input", .{});
    try common.writeFnv(out, std.mem.sliceAsBytes(w));
    try out.print("\n", .{});

    var pair = try ptqtp.quantizeMatrix(ctx, w, c.rows, c.cols, .{
        .planes = c.planes,
        .tie_scales = c.tie,
        .max_iterations = c.max_iterations,
        .epsilon = c.epsilon,
    });
    defer pair.deinit(ctx.allocator);
    const planes = [3][]const ptqtp.BlockTQ2_0{ pair.plane1, pair.plane2, pair.plane3 };
    for (planes[0..c.planes], 0..) |plane, p| {
        const bytes = std.mem.sliceAsBytes(plane);
        try out.print("plane p={d}", .{p});
        if (plane.len <= 4) {
            try out.print(" bytes=", .{});
            try common.writeHexBytes(out, bytes);
        } else {
            try common.writeFnv(out, bytes);
        }
        try out.print("\n", .{});
    }
    const s = pair.stats;
    try out.print("stats rel={x:0>16} zero={x:0>16},{x:0>16},{x:0>16} iters={x:0>16} unconverged={d} groups={d}\nend\n", .{
        f64Bits(s.rel_frob_err),    f64Bits(s.zero_frac[0]), f64Bits(s.zero_frac[1]), f64Bits(s.zero_frac[2]),
        f64Bits(s.mean_iterations), s.unconverged_groups,    s.group_count,
    });
}

pub fn main(init: std.process.Init) !void {
    const a = std.heap.page_allocator;
    var buf: [1 << 16]u8 = undefined;
    var fw = std.Io.File.stdout().writer(init.io, &buf);
    const out = &fw.interface;
    var ctx: Ctx = undefined;
    ctx.init(a);
    defer ctx.deinit();
    try out.print("# Fucina ptqtp.quantizeMatrix (tests/data/fucina_gen/gen_ptqtp.zig)\n", .{});
    for (cases) |c| try runCase(&ctx, a, c, out);
    try out.flush();
}
