//! Builds ckpt_gen.zig against a Fucina source tree. run_ckpt.sh copies it to build.zig in a
//! scratch directory (beside build.zig.zon), so gen.zig's own build.zig stays as it is.
const std = @import("std");

pub fn build(b: *std.Build) void {
    const target = b.standardTargetOptions(.{});
    const optimize = b.standardOptimizeOption(.{});
    const fucina = b.dependency("fucina", .{ .target = target, .optimize = optimize });
    const exe = b.addExecutable(.{
        .name = "fucina_ckpt_gen",
        .root_module = b.createModule(.{
            .root_source_file = b.path("ckpt_gen.zig"),
            .target = target,
            .optimize = optimize,
            .imports = &.{.{ .name = "fucina", .module = fucina.module("fucina") }},
        }),
    });
    b.installArtifact(exe);
}
