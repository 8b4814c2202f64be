//! Builds gen_muon.zig against a Fucina source tree with Fucina's scalar backend and no BLAS,
//! so that its matmuls are the plain ascending-k loops of FG_GEMM_EXACT. run_muon.sh copies
//! it to build.zig in a scratch directory, beside build.zig.zon.
const std = @import("std");

pub fn build(b: *std.Build) void {
    const target = b.standardTargetOptions(.{});
    const optimize = b.standardOptimizeOption(.{});
    const fucina = b.dependency("fucina", .{ .target = target, .optimize = optimize, .backend = .scalar, .blas = .none });
    const exe = b.addExecutable(.{
        .name = "fucina_muon_gen",
        .root_module = b.createModule(.{
            .root_source_file = b.path("gen_muon.zig"),
            .target = target,
            .optimize = optimize,
            .imports = &.{.{ .name = "fucina", .module = fucina.module("fucina") }},
        }),
    });
    b.installArtifact(exe);
}
