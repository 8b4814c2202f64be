//! Prints what Fucina's es.Trainer does to ternary genomes (TQ2_0 blocks registered with
//! addTernaryParamNamed): the packed bytes after every perturb(member) and restore(member)
//! of three iterations, and after each of their updates, for cases that cover plain and
//! antithetic populations, the three reward normalisations, the update budget's decay, two
//! genomes in one trainer (slot index in the flip streams) and a trainer that also holds an
//! f32 slot. Only the arguments and the formatting are ours; run_gen.sh es_ternary writes
//! tests/data/golden/fucina_es_ternary.txt, read by tests/cpu/test_es_ternary.cpp.
//!
//! Lines (16-hex-digit u64s, 8-hex-digit f32 bit patterns, bytes as 2 hex digits each):
//!   case name=N seed=S population=P antithetic=0|1 norm=z_score|centered_ranks|none
//!        flip_rate=F fraction=F decay=F sigma=F iterations=I slots=LEN[,LEN] floats=N
//!   init slot=K bytes=HEX           the genome registered as ternary slot K
//!   finit v=X X ...                 the f32 slot's values (only when floats > 0)
//!   perturb it=I member=M slot=K bytes=HEX
//!   restore it=I member=M slot=K bytes=HEX
//!   update it=I rewards=X,X,... slot=K bytes=HEX
//!   fupdate it=I v=X X ...          the f32 slot after update I
//!   end
const std = @import("std");
const fucina = @import("fucina");
const es = fucina.es;
const Ctx = fucina.ExecContext;
const Tensor = fucina.Tensor;
const Block = es.BlockTQ2_0;

fn at(seed: u64, i: u64) u64 {
    return fucina.rng.at(seed, i);
}

/// A genome whose code of element e is at(seed, e) % 3 (so every code occurs, clamping
/// included), laid out as TQ2_0; block b's scale is the f16 bits 0x3C00 + b (ES must
/// never touch it, and distinct values show it).
fn genome(a: std.mem.Allocator, len: usize, seed: u64) ![]Block {
    const blocks = try a.alloc(Block, len / 256);
    for (blocks, 0..) |*blk, b| {
        @memset(&blk.qs, 0);
        for (0..256) |r| {
            const code: u8 = @intCast(at(seed, b * 256 + r) % 3);
            const shift: u3 = @intCast(2 * ((r % 128) / 32));
            blk.qs[(r / 128) * 32 + (r % 128) % 32] |= code << shift;
        }
        blk.d = @intCast(0x3C00 + b);
    }
    return blocks;
}

fn hexBlocks(out: *std.Io.Writer, blocks: []const Block) !void {
    for (std.mem.sliceAsBytes(blocks)) |b| try out.print("{x:0>2}", .{b});
}

fn f32Bits(out: *std.Io.Writer, v: []const f32) !void {
    for (v) |x| try out.print(" {x:0>8}", .{@as(u32, @bitCast(x))});
}

const Case = struct {
    name: []const u8,
    seed: u64,
    population: usize,
    antithetic: bool,
    norm: es.RewardNorm,
    flip_rate: f32,
    fraction: f32,
    decay: f32,
    lens: []const usize,
    floats: usize = 0,
    /// rewards[it][member], one row per iteration.
    rewards: []const []const f32,
};

const cases = [_]Case{
    // src/es_tests.zig's pins (seed 21, len 512, 32 flips, cap 8) on a 4-member population, the
    // third update with tied rewards (z-score: every coefficient 0, no move).
    .{ .name = "plain_z", .seed = 21, .population = 4, .antithetic = false, .norm = .z_score,
       .flip_rate = 32.0 / 512.0, .fraction = 8.0 / 512.0, .decay = 0, .lens = &.{512},
       .rewards = &.{ &.{ 0.1, 0.9, -0.4, 0.35 }, &.{ 1.0, -1.0, 0.25, 0.5 }, &.{ 0.5, 0.5, 0.5, 0.5 } } },
    // Antithetic pairs (odd members mirror), centered ranks with ties, a decaying budget,
    // two genomes so that the slot index enters the streams.
    .{ .name = "anti_ranks", .seed = 0xDEADBEEFCAFEF00D, .population = 6, .antithetic = true,
       .norm = .centered_ranks, .flip_rate = 0.05, .fraction = 0.04, .decay = 0.75, .lens = &.{ 1024, 512 },
       .rewards = &.{ &.{ 0.3, -0.2, 0.3, 1.5, -2.0, 0.0 }, &.{ 1.0, 2.0, 3.0, 4.0, 5.0, 6.0 }, &.{ -1.0, -1.0, 0.5, 0.25, 0.5, -0.75 } } },
    // Raw rewards as coefficients (fractional votes that cancel and round in f32), a large
    // flip rate (many collisions) and a budget larger than the votes.
    .{ .name = "none_dense", .seed = 7, .population = 5, .antithetic = false, .norm = .none,
       .flip_rate = 0.25, .fraction = 0.9, .decay = 0, .lens = &.{256},
       .rewards = &.{ &.{ 0.1, 0.2, -0.3, 0.7, -0.7 }, &.{ 1e-3, -2.5, 3.25, 0.0, 0.125 }, &.{ 1.0, 1.0, 1.0, -3.0, 0.0 } } },
    // A trainer with an f32 slot registered before the genome: the ternary bytes depend
    // only on the ternary streams, the float update runs beside them.
    .{ .name = "mixed_anti_z", .seed = 42, .population = 4, .antithetic = true, .norm = .z_score,
       .flip_rate = 0.02, .fraction = 0.01, .decay = 0.5, .lens = &.{768}, .floats = 9,
       .rewards = &.{ &.{ 0.5, -0.5, 0.25, 1.0 }, &.{ -1.0, 0.0, 2.0, 0.5 }, &.{ 0.2, 0.1, 0.4, 0.3 } } },
};

const sigma: f32 = 0.05;

fn runCase(ctx: *Ctx, a: std.mem.Allocator, c: Case, out: *std.Io.Writer) !void {
    var trainer = try es.Trainer.init(a, .{
        .sigma = sigma,
        .population = c.population,
        .antithetic = c.antithetic,
        .reward_norm = c.norm,
        .ternary_flip_rate = c.flip_rate,
        .ternary_update_fraction = c.fraction,
        .ternary_update_decay = c.decay,
        .seed = c.seed,
    });
    defer trainer.deinit();
    try out.print("case name={s} seed={x:0>16} population={d} antithetic={d} norm={s} flip_rate={x:0>8} " ++
        "fraction={x:0>8} decay={x:0>8} sigma={x:0>8} iterations={d} slots=", .{
        c.name,                                 c.seed,                            c.population,
        @intFromBool(c.antithetic),             @tagName(c.norm),                  @as(u32, @bitCast(c.flip_rate)),
        @as(u32, @bitCast(c.fraction)),         @as(u32, @bitCast(c.decay)),       @as(u32, @bitCast(sigma)),
        c.rewards.len,
    });
    for (c.lens, 0..) |len, k| try out.print("{s}{d}", .{ if (k > 0) "," else "", len });
    try out.print(" floats={d}\n", .{c.floats});

    var fvals: [16]f32 = undefined;
    for (fvals[0..c.floats], 0..) |*v, i| v.* = @as(f32, @floatFromInt(@as(i64, @intCast(at(c.seed, 1000 + i) % 2001)) - 1000)) / 512.0;
    var w: ?Tensor(.{.n}) = null;
    defer if (w) |*t| t.deinit();
    if (c.floats > 0) {
        w = try Tensor(.{.n}).fromSlice(ctx, .{c.floats}, fvals[0..c.floats]);
        try trainer.addParamNamed(&w.?, "w");
        try out.print("finit v=", .{});
        try f32Bits(out, fvals[0..c.floats]);
        try out.print("\n", .{});
    }

    var genomes: [2][]Block = undefined;
    for (c.lens, 0..) |len, k| {
        genomes[k] = try genome(a, len, c.seed ^ (0x7E57 + k));
        try trainer.addTernaryParamNamed(genomes[k], len, if (k == 0) "g0" else "g1");
        try out.print("init slot={d} bytes=", .{k});
        try hexBlocks(out, genomes[k]);
        try out.print("\n", .{});
    }
    defer for (genomes[0..c.lens.len]) |g| a.free(g);

    for (c.rewards, 0..) |rewards, it| {
        for (0..c.population) |m| {
            try trainer.perturb(ctx, m);
            for (c.lens, 0..) |_, k| {
                try out.print("perturb it={d} member={d} slot={d} bytes=", .{ it, m, k });
                try hexBlocks(out, genomes[k]);
                try out.print("\n", .{});
            }
            try trainer.restore(ctx, m);
            for (c.lens, 0..) |_, k| {
                try out.print("restore it={d} member={d} slot={d} bytes=", .{ it, m, k });
                try hexBlocks(out, genomes[k]);
                try out.print("\n", .{});
            }
        }
        _ = try trainer.update(ctx, rewards);
        for (c.lens, 0..) |_, k| {
            try out.print("update it={d} rewards=", .{it});
            for (rewards, 0..) |r, m| try out.print("{s}{x:0>8}", .{ if (m > 0) "," else "", @as(u32, @bitCast(r)) });
            try out.print(" slot={d} bytes=", .{k});
            try hexBlocks(out, genomes[k]);
            try out.print("\n", .{});
        }
        if (c.floats > 0) {
            try out.print("fupdate it={d} v=", .{it});
            try f32Bits(out, try w.?.dataConst());
            try out.print("\n", .{});
        }
    }
    try out.print("end\n", .{});
}

pub fn main(init: std.process.Init) !void {
    const a = std.heap.page_allocator;
    var buf: [1 << 16]u8 = undefined;
    var fw = std.Io.File.stdout().writer(init.io, &buf);
    const out = &fw.interface;
    var ctx: Ctx = undefined;
    ctx.init(a);
    defer ctx.deinit();
    try out.print("# Fucina es.Trainer on TQ2_0 genomes (tests/data/fucina_gen/gen_es_ternary.zig)\n", .{});
    for (cases) |c| try runCase(&ctx, a, c, out);
    try out.flush();
}
