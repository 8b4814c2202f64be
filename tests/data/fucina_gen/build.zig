//! Builds gen.zig against a Fucina source tree (see README.md and run.sh, which writes the
//! build.zig.zon that points at it).
const std = @import("std");

pub fn build(b: *std.Build) void {
    const target = b.standardTargetOptions(.{});
    const optimize = b.standardOptimizeOption(.{});
    // -Dlibc=true links the system libc, so that f64 log/cos/sin may resolve to its libm
    // instead of Zig's compiler_rt (run.sh builds both and compares).
    const link_libc = b.option(bool, "libc", "link the system libc") orelse false;
    // -Dblas=none|openblas|...: Fucina's own option, passed on (its default probes the host).
    const blas = b.option([]const u8, "blas", "Fucina's BLAS provider (default: Fucina's probe)");
    const fucina = if (blas) |v|
        b.dependency("fucina", .{ .target = target, .optimize = optimize, .blas = v })
    else
        b.dependency("fucina", .{ .target = target, .optimize = optimize });
    const exe = b.addExecutable(.{
        .name = "fucina_gen",
        .root_module = b.createModule(.{
            .root_source_file = b.path("gen.zig"),
            .target = target,
            .optimize = optimize,
            .imports = &.{.{ .name = "fucina", .module = fucina.module("fucina") }},
        }),
    });
    exe.root_module.link_libc = link_libc;
    b.installArtifact(exe);
}
