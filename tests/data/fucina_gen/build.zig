//! Builds one generator against a Fucina source tree (see README.md and run_gen.sh, which
//! copies it, build.zig.zon and the generator's sources into a scratch directory and links
//! `fucina` there): -Dgen=FILE picks the program (default gen.zig).
const std = @import("std");

pub fn build(b: *std.Build) void {
    const target = b.standardTargetOptions(.{});
    const optimize = b.standardOptimizeOption(.{});
    const gen = b.option([]const u8, "gen", "the generator's source file (default gen.zig)") orelse "gen.zig";
    // -Dlibc=true links the system libc, so that f64 log/cos/sin may resolve to its libm
    // instead of Zig's compiler_rt (README.md, "The scalar gaussian's libm").
    const link_libc = b.option(bool, "libc", "link the system libc") orelse false;
    // -Dblas=none|openblas|...: Fucina's own option, passed on (its default probes the host).
    const blas = b.option([]const u8, "blas", "Fucina's BLAS provider (default: Fucina's probe)");
    // -Dscalar=true: Fucina's scalar backend and no BLAS, whose matmul is the plain ascending-k
    // f32 loop that forgia's FG_GEMM_EXACT reproduces (gen_muon.zig, gen_apollo.zig).
    const scalar = b.option(bool, "scalar", "Fucina's scalar backend, no BLAS") orelse false;
    const fucina = if (scalar)
        b.dependency("fucina", .{ .target = target, .optimize = optimize, .backend = .scalar, .blas = .none })
    else if (blas) |v|
        b.dependency("fucina", .{ .target = target, .optimize = optimize, .blas = v })
    else
        b.dependency("fucina", .{ .target = target, .optimize = optimize });
    const exe = b.addExecutable(.{
        .name = "fucina_gen",
        .root_module = b.createModule(.{
            .root_source_file = b.path(gen),
            .target = target,
            .optimize = optimize,
            .imports = &.{.{ .name = "fucina", .module = fucina.module("fucina") }},
        }),
    });
    exe.root_module.link_libc = link_libc;
    b.installArtifact(exe);
}
