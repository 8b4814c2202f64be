//! What the optimizer generators (gen_optim, gen_muon, gen_apollo, gen_frames, gen_set) share:
//! the integer-exact input streams forgia's tests rebuild, gradients delivered through Fucina's
//! autograd, the small fixed tensors of the frame cases, and the text writers of the goldens.
//! run_gen.sh copies it beside the generator it builds.
const std = @import("std");
const fucina = @import("fucina");
const Tensor = fucina.Tensor;
const Ctx = fucina.ExecContext;

pub const P16 = enum { none, bf16, f16 };

pub const V32 = Tensor(.{.out});
pub const M32 = Tensor(.{ .out, .in });
pub const C32 = Tensor(.{ .out, .in, .k });

/// splitmix64 in counter form (forgia's fg_rng_at, the torch generators' at()).
pub fn at(seed: u64, i: u64) u64 {
    var z = seed +% (i + 1) *% 0x9E3779B97F4A7C15;
    z = (z ^ (z >> 30)) *% 0xBF58476D1CE4E5B9;
    z = (z ^ (z >> 27)) *% 0x94D049BB133111EB;
    return z ^ (z >> 31);
}

fn streamValue(seed: u64, i: u64, scale: f32) f32 {
    return (@as(f32, @floatFromInt(at(seed, i) >> 40)) * 0x1p-24 - 0.5) * scale;
}

/// Value i of stream seed: ((at >> 40) * 2^-24 - 0.5) * scale, every operation exact in f32.
pub fn stream(comptime n: usize, seed: u64, scale: f32) [n]f32 {
    var out: [n]f32 = undefined;
    for (&out, 0..) |*v, i| v.* = streamValue(seed, i, scale);
    return out;
}

/// The same stream, allocated (for sizes known only at run time).
pub fn streamAlloc(a: std.mem.Allocator, n: usize, seed: u64, scale: f32) ![]f32 {
    const out = try a.alloc(f32, n);
    for (out, 0..) |*v, i| v.* = streamValue(seed, i, scale);
    return out;
}

/// FNV-1a-64 over bytes.
pub fn fnv(bytes: []const u8) u64 {
    var h: u64 = 0xcbf29ce484222325;
    for (bytes) |b| h = (h ^ b) *% 0x100000001b3;
    return h;
}

/// Parameter tensor types of one dtype: V [n], M [r, c], C [a, b, c], and their element.
pub fn Types(comptime p16: P16) type {
    return struct {
        pub const dt: fucina.DType = switch (p16) {
            .none => .f32,
            .bf16 => .bf16,
            .f16 => .f16,
        };
        pub const V = Tensor(.{ .dtype = dt, .tags = .{.out} });
        pub const M = Tensor(.{ .dtype = dt, .tags = .{ .out, .in } });
        pub const C = Tensor(.{ .dtype = dt, .tags = .{ .out, .in, .k } });
        pub const Elem = switch (p16) {
            .none => f32,
            .bf16 => u16,
            .f16 => f16,
        };
        fn one(x: f32) Elem {
            return switch (p16) {
                .none => x,
                .bf16 => fucina.f32ToBf16(x),
                .f16 => @floatCast(x),
            };
        }
        pub fn narrow(comptime n: usize, v: [n]f32) [n]Elem {
            var out: [n]Elem = undefined;
            for (v, 0..) |x, i| out[i] = one(x);
            return out;
        }
        pub fn narrowAlloc(a: std.mem.Allocator, v: []const f32) ![]Elem {
            const out = try a.alloc(Elem, v.len);
            for (v, 0..) |x, i| out[i] = one(x);
            return out;
        }
    };
}

/// Gradient c for w: backward of sum(w * c), so dL/dw = c. A 16-bit w (p16 != .none) is
/// widened first, so its gradient is f32.
pub fn grad(ctx: *Ctx, w: anytype, comptime p16: P16, comptime C: type, shape: anytype, c_values: []const f32) !void {
    var c = try C.fromSlice(ctx, shape, c_values);
    defer c.deinit();
    if (p16 == .none) {
        var prod = try w.mul(ctx, &c);
        defer prod.deinit();
        var loss = try prod.sumAll(ctx);
        defer loss.deinit();
        try loss.backward(ctx);
    } else {
        var wide = try w.to(ctx, .f32);
        defer wide.deinit();
        var prod = try wide.mul(ctx, &c);
        defer prod.deinit();
        var loss = try prod.sumAll(ctx);
        defer loss.deinit();
        try loss.backward(ctx);
    }
}

/// grad for an f32 variable.
pub fn grad32(ctx: *Ctx, w: anytype, comptime C: type, shape: anytype, c_values: []const f32) !void {
    return grad(ctx, w, .none, C, shape, c_values);
}

/// grad for a 16-bit variable, widened first.
pub fn grad16(ctx: *Ctx, w: anytype, comptime C: type, shape: anytype, c_values: []const f32) !void {
    return grad(ctx, w, .bf16, C, shape, c_values);
}

/// The fixed values of the frame cases (gen_frames.zig, gen_set.zig).
pub const w6 = [_]f32{ 1.0, -2.0, 0.5, 3.0, -0.25, 1.5 };
pub const g6 = [_][6]f32{ .{ 0.5, -1.0, 2.0, 0.25, -0.75, 1.25 }, .{ -0.3, 0.8, -1.2, 0.6, 0.1, -0.9 } };
pub const w12 = [_]f32{ 0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, -0.8, 0.9, -1.0, 1.1, -1.2 };
pub const g12 = [_][12]f32{
    .{ 0.5, -0.25, 0.125, 1.0, -1.5, 0.75, 0.3, -0.6, 0.9, -1.2, 0.2, 0.4 },
    .{ -0.1, 0.2, -0.3, 0.4, -0.5, 0.6, -0.7, 0.8, -0.9, 1.0, -1.1, 1.2 },
};
pub const b3 = [_]f32{ 0.25, -0.75, 0.5 };
pub const gb3 = [_][3]f32{ .{ 0.5, -1.0, 0.25 }, .{ -0.125, 0.375, 2.0 } };

/// A case line's `key=value` words after its first word (the kind).
pub const Fields = struct {
    it: std.mem.TokenIterator(u8, .scalar),

    pub fn init(line: []const u8) Fields {
        var it = std.mem.tokenizeScalar(u8, line, ' ');
        _ = it.next();
        return .{ .it = it };
    }

    pub fn next(f: *Fields) ?struct { k: []const u8, v: []const u8 } {
        const kv = f.it.next() orelse return null;
        const eq = std.mem.indexOfScalar(u8, kv, '=').?;
        return .{ .k = kv[0..eq], .v = kv[eq + 1 ..] };
    }
};

/// The first word of a case line.
pub fn kind(line: []const u8) []const u8 {
    var it = std.mem.tokenizeScalar(u8, line, ' ');
    return it.next().?;
}

/// The f32 values of a Fucina parameter: the tensor's, or a 16-bit parameter's f32 master.
pub fn paramF32(p: anytype) []const f32 {
    return switch (p.value) {
        .f32 => |*t| t.dataConst(),
        else => p.master,
    };
}

/// A 16-bit parameter's own bytes; null for an f32 parameter.
pub fn param16(p: anytype) ?[]const u8 {
    return switch (p.value) {
        .f32 => null,
        .f16 => |*t| std.mem.sliceAsBytes(t.dataConst()),
        .bf16 => |*t| std.mem.sliceAsBytes(t.dataConst()),
    };
}

/// ` fnv=<16 hex digits>`, the hash that stands in for a long tensor or state.
pub fn writeFnv(out: *std.Io.Writer, bytes: []const u8) !void {
    try out.print(" fnv={x:0>16}", .{fnv(bytes)});
}

/// ` xxxxxxxx` per value: the f32 bit patterns.
pub fn writeF32Bits(out: *std.Io.Writer, f: []const f32) !void {
    for (f) |x| try out.print(" {x:0>8}", .{@as(u32, @bitCast(x))});
}

/// ` xxxx` per little-endian u16 of bytes: 16-bit bit patterns.
pub fn writeU16Bits(out: *std.Io.Writer, bytes: []const u8) !void {
    var i: usize = 0;
    while (i < bytes.len) : (i += 2) try out.print(" {x:0>4}", .{std.mem.readInt(u16, bytes[i..][0..2], .little)});
}

/// Two hex digits per byte, no separator (a saveState dump).
pub fn writeHexBytes(out: *std.Io.Writer, bytes: []const u8) !void {
    for (bytes) |b| try out.print("{x:0>2}", .{b});
}

/// The bytes opt.saveState writes, in memory owned by a.
pub fn savedState(a: std.mem.Allocator, opt: anytype) ![]u8 {
    var w: std.Io.Writer.Allocating = .init(a);
    errdefer w.deinit();
    try opt.saveState(&w.writer);
    return w.toOwnedSlice();
}
