//! Writes training checkpoint directories with Fucina's own code (training_checkpoint.beginSave,
//! writeFileAtomic + state_dict.saveStateDict, saveTrainerState), as the goldens that
//! tests/cpu/test_ckpt_dir.cpp compares forgia's writer with byte for byte and loads with
//! forgia's reader. Our code only picks the inputs; every byte comes from Fucina.
//!
//!   fucina_ckpt_gen OUT_ROOT
//!     OUT_ROOT/fucina_ckpt/{model.safetensors,trainer_state.json}   a committed checkpoint
//!     OUT_ROOT/fucina_trainer_states/sN/trainer_state.json           more trainer states
//!     OUT_ROOT/fucina_f64_text.txt   `{d}` of doubles, the formatting saveTrainerState uses
//!                                    for f64 fields: "<16 hex digits of the bits> <text>"
//!
//! The inputs are repeated in the test: change both together.
const std = @import("std");
const fucina = @import("fucina");
const tc = fucina.training_checkpoint;
const sd = fucina.state_dict;
const Shape = @FieldType(sd.NamedTensor, "shape");

fn widen(x: f32) f64 {
    return x;
}

const Entries = struct {
    list: []const sd.NamedTensor,
    fn write(self: Entries, w: *std.Io.Writer) anyerror!void {
        try sd.saveStateDict(std.heap.page_allocator, w, self.list);
    }
};

fn le(comptime T: type, comptime n: usize, vals: [n]T) [n * @sizeOf(T)]u8 {
    var out: [n * @sizeOf(T)]u8 = undefined;
    for (vals, 0..) |v, i| {
        const U = std.meta.Int(.unsigned, @bitSizeOf(T));
        std.mem.writeInt(U, out[i * @sizeOf(T) ..][0..@sizeOf(T)], @bitCast(v), .little);
    }
    return out;
}

fn saveState(a: std.mem.Allocator, io: std.Io, dir: []const u8, s: tc.TrainerState) !void {
    try tc.beginSave(a, io, dir);
    try tc.saveTrainerState(a, io, dir, s);
}

/// Random doubles of every magnitude (raw bit patterns) and widened f32s, xorshift64.
fn writeF64Texts(a: std.mem.Allocator, io: std.Io, root: []const u8) !void {
    var text: std.Io.Writer.Allocating = .init(a);
    defer text.deinit();
    const w = &text.writer;
    var x: u64 = 0x9E3779B97F4A7C15;
    var i: usize = 0;
    while (i < 3000) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const v: f64 = if (i % 2 == 0) @bitCast(x) else @as(f32, @bitCast(@as(u32, @truncate(x >> 7))));
        if (!std.math.isFinite(v)) continue;
        try w.print("{x:0>16} {d}\n", .{ @as(u64, @bitCast(v)), v });
        i += 1;
    }
    const path = try std.fs.path.join(a, &.{ root, "fucina_f64_text.txt" });
    var dir = std.Io.Dir.cwd();
    try dir.writeFile(io, .{ .sub_path = path, .data = text.written() });
}

pub fn main(init: std.process.Init) !void {
    const a = std.heap.page_allocator;
    const io = init.io;
    const args = try init.minimal.args.toSlice(init.arena.allocator());
    if (args.len != 2) {
        std.debug.print("usage: fucina_ckpt_gen OUT_ROOT\n", .{});
        std.process.exit(2);
    }
    const root = args[1];

    // The tiny model: every state-dict dtype, names that sort differently by dtype and by
    // name, one non-ASCII name.
    const w = le(f32, 6, .{ 0.5, -1.25, 3.0, 0.001, -0.0, 1.0e-30 });
    const e = le(f32, 6, .{ 1, 2, 3, 4, 5, 6 });
    const s = le(f32, 1, .{0.1});
    const nrm = le(u16, 3, .{ 0x3f80, 0xbf00, 0x4049 });
    const hb = le(u16, 2, .{ 0x3c00, 0xc000 });
    const pos = le(i64, 4, .{ 0, 1, -7, 1 << 40 });
    const entries = [_]sd.NamedTensor{
        .{ .name = "layers.0.weight", .dtype = .f32, .shape = try Shape.init(&.{ 2, 3 }), .bytes = &w },
        .{ .name = "embed", .dtype = .f32, .shape = try Shape.init(&.{ 3, 2 }), .bytes = &e },
        .{ .name = "bl\u{f6}ck.scale", .dtype = .f32, .shape = try Shape.init(&.{1}), .bytes = &s },
        .{ .name = "norm.weight", .dtype = .bf16, .shape = try Shape.init(&.{3}), .bytes = &nrm },
        .{ .name = "head.bias", .dtype = .f16, .shape = try Shape.init(&.{2}), .bytes = &hb },
        .{ .name = "positions", .dtype = .i64, .shape = try Shape.init(&.{ 2, 2 }), .bytes = &pos },
    };

    const dir = try std.fs.path.join(a, &.{ root, "fucina_ckpt" });
    try tc.beginSave(a, io, dir);
    const model_path = try tc.pathJoin(a, dir, tc.model_state_file);
    try tc.writeFileAtomic(io, model_path, Entries{ .list = &entries }, Entries.write);
    try tc.saveTrainerState(a, io, dir, .{
        .step = 1200,
        .seed = 0xDEADBEEFCAFEF00D,
        .lora_rank = 8,
        .lora_alpha = 16,
        .lora_dropout_p = widen(0.05),
        .learning_rate = widen(3e-4),
        .accum_steps = 4,
        .data_seed = (1 << 53) + 1,
        .data_epoch = 2,
        .data_index = 37,
        .es_sigma = widen(0.001),
        .es_alpha = 0.0005,
        .es_population = 30,
        .es_noise = 1,
        .es_antithetic = 1,
        .es_anchor_decay = 2,
        .es_anchor_lambda = 10.0,
        .es_ternary_flip_rate = 0.001,
        .es_ternary_update_fraction = 0.005,
        .es_ternary_update_decay = 0.015,
        .es_iteration = 17,
    });

    const states = [_]tc.TrainerState{
        // Fucina's pinned test string.
        .{ .step = 12, .seed = 34, .lora_rank = 8, .learning_rate = 1e-3, .es_iteration = 17 },
        .{ .step = 0, .seed = std.math.maxInt(u64) },
        .{
            .step = 9007199254740993,
            .seed = 1,
            .lora_alpha = 1e21,
            .lora_dropout_p = 5e-324,
            .learning_rate = 0.1,
            .es_sigma = 1e-10,
            .es_alpha = 123456.789,
            .es_anchor_lambda = -0.0,
            .es_ternary_flip_rate = widen(2.5e-8),
            .es_ternary_update_fraction = std.math.floatMax(f64),
            .es_ternary_update_decay = 0.30000000000000004,
            .es_iteration = 0,
        },
        .{ .step = 3, .seed = 7, .learning_rate = std.math.nan(f64), .es_sigma = std.math.inf(f64), .es_alpha = -std.math.inf(f64), .lora_alpha = widen(std.math.floatMin(f32)) },
    };
    try writeF64Texts(a, io, root);
    for (states, 0..) |st, i| {
        var buf: [32]u8 = undefined;
        const leaf = try std.fmt.bufPrint(&buf, "s{d}", .{i});
        const sdir = try std.fs.path.join(a, &.{ root, "fucina_trainer_states", leaf });
        try saveState(a, io, sdir, st);
    }
}
