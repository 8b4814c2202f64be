//! Builds gen_apollo.zig against a Fucina source tree with Fucina's scalar backend
//! (-Dbackend=scalar, no BLAS), whose matmul is the plain ordered f32 loop that forgia's
//! FG_GEMM_EXACT reproduces. run_apollo.sh copies it to build.zig in a scratch directory.
const std = @import("std");

pub fn build(b: *std.Build) void {
    const target = b.standardTargetOptions(.{});
    const optimize = b.standardOptimizeOption(.{});
    const fucina = b.dependency("fucina", .{ .target = target, .optimize = optimize, .backend = .scalar, .blas = .none });
    const exe = b.addExecutable(.{
        .name = "fucina_apollo_gen",
        .root_module = b.createModule(.{
            .root_source_file = b.path("gen_apollo.zig"),
            .target = target,
            .optimize = optimize,
            .imports = &.{.{ .name = "fucina", .module = fucina.module("fucina") }},
        }),
    });
    b.installArtifact(exe);
}
