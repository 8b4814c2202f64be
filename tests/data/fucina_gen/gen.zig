//! Prints Fucina's RNG streams and sumSquares, computed by Fucina itself (its `rng` and
//! `optim` modules and its dropout kernel), as the golden files that tests/cpu/test_rng.cpp
//! and the reductions tests compare with bit for bit. Our code only picks the arguments
//! and formats the results; every value comes from a Fucina function.
//!
//!   fucina_gen rng        tests/data/golden/fucina_rng.txt
//!   fucina_gen sumsq      tests/data/golden/fucina_sumsq.txt
//!   fucina_gen gauss SEED N      N values of rng.gaussianFill(SEED, ., 1), raw LE f32
//!   fucina_gen libm SEED N       per pair p < N: f64 bits of @log(ua), @cos(t), @sin(t) (LE)
//!
//! Line format of `rng` (one record a line, `#` starts a comment): a kind, then key=value
//! fields. seed and words are 16 hex digits, f32 values and f32 parameters are their 8-hex-
//! digit bit patterns, first/n/fan_in are decimal. A value list is `v=` followed by
//! comma-separated hex; `fnv=` is FNV-1a-64 over the little-endian bytes of all n values
//! (u32 patterns; for masks, one byte 0/1 per element).
const std = @import("std");
const fucina = @import("fucina");
const rng = fucina.rng;

const Out = *std.Io.Writer;

fn fnv(bytes: []const u8, h0: u64) u64 {
    var h = h0;
    for (bytes) |b| {
        h ^= b;
        h *%= 0x100000001b3;
    }
    return h;
}

fn fnvF32(values: []const f32) u64 {
    var h: u64 = 0xcbf29ce484222325;
    for (values) |v| {
        var le: [4]u8 = undefined;
        std.mem.writeInt(u32, &le, @bitCast(v), .little);
        h = fnv(&le, h);
    }
    return h;
}

fn bits(v: f32) u32 {
    return @bitCast(v);
}

/// Values printed in full up to this many; longer fills print their hash only.
const list_max = 64;

fn putF32s(out: Out, values: []const f32) !void {
    if (values.len <= list_max) {
        try out.writeAll(" v=");
        for (values, 0..) |v, i| {
            if (i != 0) try out.writeAll(",");
            try out.print("{x:0>8}", .{bits(v)});
        }
    }
    try out.print(" fnv={x:0>16}\n", .{fnvF32(values)});
}

fn genAt(out: Out, seed: u64, first: u64, n: usize) !void {
    try out.print("at seed={x:0>16} first={d} n={d} v=", .{ seed, first, n });
    for (0..n) |k| {
        if (k != 0) try out.writeAll(",");
        try out.print("{x:0>16}", .{rng.at(seed, first +% k)});
    }
    try out.writeAll("\n");
}

fn genUniform(out: Out, a: std.mem.Allocator, seed: u64, n: usize, lo: f32, hi: f32) !void {
    const v = try a.alloc(f32, n);
    defer a.free(v);
    rng.uniformFill(seed, v, lo, hi);
    try out.print("uniform seed={x:0>16} n={d} lo={x:0>8} hi={x:0>8}", .{ seed, n, bits(lo), bits(hi) });
    try putF32s(out, v);
}

fn genKaiming(out: Out, a: std.mem.Allocator, seed: u64, n: usize, fan_in: usize) !void {
    const v = try a.alloc(f32, n);
    defer a.free(v);
    rng.kaimingUniformFill(seed, v, fan_in);
    try out.print("kaiming seed={x:0>16} n={d} fan_in={d}", .{ seed, n, fan_in });
    try putF32s(out, v);
}

/// first == 0 uses the sequential gaussianFill (kind gauss_fill), else gaussianFillAt.
fn genGauss(out: Out, a: std.mem.Allocator, seed: u64, first: u64, n: usize, scale: f32) !void {
    const v = try a.alloc(f32, n);
    defer a.free(v);
    if (first == 0) {
        rng.gaussianFill(seed, v, scale);
        try out.print("gauss_fill", .{});
    } else {
        rng.gaussianFillAt(seed, first, v, scale);
        try out.print("gauss_at", .{});
    }
    try out.print(" seed={x:0>16} first={d} n={d} scale={x:0>8}", .{ seed, first, n, bits(scale) });
    try putF32s(out, v);
}

fn genFast(out: Out, a: std.mem.Allocator, seed: u64, first: u64, n: usize, scale: f32) !void {
    const v = try a.alloc(f32, n);
    defer a.free(v);
    rng.gaussianFillAtFast(seed, first, v, scale);
    try out.print("gauss_fast seed={x:0>16} first={d} n={d} scale={x:0>8}", .{ seed, first, n, bits(scale) });
    try putF32s(out, v);
}

/// Fucina's dropout forward on an all-ones input: the mask is where the output is nonzero,
/// and every kept element equals the inverted scale.
fn genKeep(out: Out, a: std.mem.Allocator, ctx: *fucina.ExecContext, seed: u64, n: usize, p: f32) !void {
    const ones = try a.alloc(f32, n);
    defer a.free(ones);
    @memset(ones, 1);
    var x = try ctx.fromSliceRank(1, .{n}, ones);
    defer x.deinit();
    var y = try ctx.dropoutForward(&x, p, seed);
    defer y.deinit();
    const mask = try a.alloc(u8, n);
    defer a.free(mask);
    var scale: ?f32 = null;
    for (y.dataConst(), 0..) |v, i| {
        mask[i] = @intFromBool(v != 0);
        if (v != 0) {
            if (scale) |s| std.debug.assert(bits(s) == bits(v));
            scale = v;
        }
    }
    try out.print("keep seed={x:0>16} n={d} p={x:0>8}", .{ seed, n, bits(p) });
    if (scale) |s| try out.print(" scale={x:0>8}", .{bits(s)});
    if (n <= list_max) {
        try out.writeAll(" mask=");
        for (mask) |m| try out.print("{d}", .{m});
    }
    try out.print(" fnv={x:0>16}\n", .{fnv(mask, 0xcbf29ce484222325)});
}

fn genRng(out: Out, a: std.mem.Allocator) !void {
    var ctx: fucina.ExecContext = undefined;
    ctx.init(a);
    defer ctx.deinit();

    try out.writeAll("# Fucina 0.2.0 RNG streams, printed by tests/data/fucina_gen (see its README).\n");
    const boundary: u64 = 0x31628AF67B2131AB;
    const dead: u64 = 0xDEADBEEFCAFEF00D;
    const max: u64 = std.math.maxInt(u64);

    // splitmix64 words; the ES member seeds and iid stream seeds (es.zig's derivation); the
    // ternary member seed of es_tests.zig and its slot-0 stream seed; counters near 2^64 wrap.
    for ([_]u64{ 0, 1, 42, boundary, dead, max }) |s| try genAt(out, s, 0, 4);
    try genAt(out, 42, 1000000007, 3);
    try genAt(out, 7, max - 1, 3);
    try genAt(out, 42 ^ 0x65735f7365656473, 0, 4);
    try genAt(out, rng.at(42 ^ 0x65735f7365656473, 0) ^ 0x65735f6e6f697365, 0, 4);
    try genAt(out, 21 ^ 0x65735f7472697473, 0, 1);
    try genAt(out, rng.at(21 ^ 0x65735f7472697473, 0) ^ 0x65735f7472697473, 0, 1);
    {
        var state = boundary;
        try out.print("splitmix64 seed={x:0>16} v={x:0>16}\n", .{ boundary, rng.splitmix64(&state) });
    }

    // uniformFill: the reference values, the rounding-boundary clamp, odd spans, a hash.
    try genUniform(out, a, 42, 4, 0, 1);
    for ([_][2]f32{ .{ -0.25, 0.75 }, .{ 0, 1 }, .{ -1, 1 }, .{ 1, 1.0000001 } }) |b|
        try genUniform(out, a, boundary, 3, b[0], b[1]);
    try genUniform(out, a, 99, 9, -0.25, 0.75);
    try genUniform(out, a, 5, 7, -3.5, 1e-3);
    try genUniform(out, a, 6, 5, -1e30, 1e30);
    try genUniform(out, a, 8, 5, 1e-30, 3e-30);
    try genUniform(out, a, 42, 4097, -1, 1);

    // kaimingUniformFill
    try genKaiming(out, a, 7, 4, 64);
    try genKaiming(out, a, 3, 5, 1);
    try genKaiming(out, a, 11, 7, 3);
    try genKaiming(out, a, 12, 6, 4096);
    try genKaiming(out, a, 7, 8192, 64);

    // gaussianFill (sequential) and gaussianFillAt: f64 libm log/cos/sin.
    try genGauss(out, a, 42, 0, 8, 1);
    try genGauss(out, a, 42, 0, 4096, 1);
    try genGauss(out, a, 1, 0, 7, 1);
    try genGauss(out, a, dead, 0, 4097, 1);
    try genGauss(out, a, 9, 0, 5, 0.5);
    try genGauss(out, a, 42, 3, 3, 1);
    try genGauss(out, a, 42, 5, 11, 1);
    try genGauss(out, a, 42, 1, 4096, 1);
    // APOLLO projection (optim.zig's Apollo): slot seed 1, rank 2, chunks 0 and 1.
    const apollo_scale: f32 = 1.0 / @sqrt(@as(f32, 2));
    try genGauss(out, a, 1, 0, 6, apollo_scale);
    try genGauss(out, a, 1 +% 0x9E3779B97F4A7C15, 0, 6, apollo_scale);
    try genGauss(out, a, 42, 0, 1 << 20, 1);

    // gaussianFillAtFast: the ES noise contract; odd heads, odd tails, vector bodies.
    try genFast(out, a, 42, 0, 8, 1);
    try genFast(out, a, 42, 3, 3, 1);
    try genFast(out, a, 1, 0, 4, 1);
    try genFast(out, a, 0xE01F929105F950D3, 0, 4, 1);
    for ([_]u64{ 42, 1, dead }) |s| try genFast(out, a, s, 0, 4096, 1);
    try genFast(out, a, 42, 0, 17, 1);
    try genFast(out, a, 42, 1, 16, 1);
    try genFast(out, a, 42, 7, 33, 1);
    try genFast(out, a, 5, 0, 9, 0.02);
    try genFast(out, a, 5, 2, 5, -3);
    try genFast(out, a, 42, 0, 4097, 1);
    try genFast(out, a, 77, 12345, 1001, 1);
    try genFast(out, a, 42, 0, 1 << 20, 1);

    // Inverted-dropout keep masks.
    for ([_]f32{ 0, 0.1, 0.25, 0.5, 0.9, 0.999 }) |p| try genKeep(out, a, &ctx, 0xd20b0a7, 64, p);
    try genKeep(out, a, &ctx, 42, 4096, 0.3);
    try genKeep(out, a, &ctx, 1, 5, 0.5);
}

fn genSumsq(out: Out, a: std.mem.Allocator) !void {
    var ctx: fucina.ExecContext = undefined;
    ctx.init(a);
    defer ctx.deinit();
    try out.writeAll("# Fucina 0.2.0 optim.sumSquares of rng.uniformFill(seed, n values, lo, hi); sumsq_bits is the f64's bits.\n");
    for ([_]usize{ 1, 5, 17, 32768, 32769, 100003 }) |n| {
        const v = try a.alloc(f32, n);
        defer a.free(v);
        rng.uniformFill(42, v, -1, 1);
        const s = try fucina.optim.sumSquares(&ctx, v);
        try out.print("n={d} seed=42 lo=-1 hi=1 sumsq_bits={x:0>16}\n", .{ n, @as(u64, @bitCast(s)) });
    }
}

fn dumpGauss(out: Out, a: std.mem.Allocator, seed: u64, n: usize) !void {
    const v = try a.alloc(f32, n);
    defer a.free(v);
    rng.gaussianFill(seed, v, 1);
    for (v) |x| try out.writeInt(u32, @bitCast(x), .little);
}

/// The libm calls of gaussianFill, one pair at a time, on the same arguments.
fn dumpLibm(out: Out, seed: u64, n: usize) !void {
    for (0..n) |p| {
        const x = rng.at(seed, 2 * p);
        const y = rng.at(seed, 2 * p + 1);
        const ua = (@as(f64, @floatFromInt(x >> 11)) + 1) * 0x1.0p-53;
        const ub = @as(f64, @floatFromInt(y >> 11)) * 0x1.0p-53;
        const angle = 2.0 * std.math.pi * ub;
        try out.writeInt(u64, @bitCast(@log(ua)), .little);
        try out.writeInt(u64, @bitCast(@cos(angle)), .little);
        try out.writeInt(u64, @bitCast(@sin(angle)), .little);
    }
}

pub fn main(init: std.process.Init) !void {
    const a = std.heap.page_allocator;
    const args = try init.minimal.args.toSlice(init.arena.allocator());
    var buf: [1 << 16]u8 = undefined;
    var w = std.Io.File.stdout().writer(init.io, &buf);
    const out = &w.interface;
    const what = if (args.len > 1) args[1] else "";
    if (std.mem.eql(u8, what, "rng")) {
        try genRng(out, a);
    } else if (std.mem.eql(u8, what, "sumsq")) {
        try genSumsq(out, a);
    } else if ((std.mem.eql(u8, what, "gauss") or std.mem.eql(u8, what, "libm")) and args.len == 4) {
        const seed = try std.fmt.parseInt(u64, args[2], 0);
        const n = try std.fmt.parseInt(usize, args[3], 0);
        if (what[0] == 'g') try dumpGauss(out, a, seed, n) else try dumpLibm(out, seed, n);
    } else {
        std.debug.print("usage: fucina_gen rng | sumsq | gauss SEED N | libm SEED N\n", .{});
        std.process.exit(2);
    }
    try out.flush();
}
