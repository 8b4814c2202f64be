#include <gtest/gtest.h>

#include <string>

#include "forgia/version.h"

// The header's macros, CMake's project version (read from the header) and the library
// linked all agree.
TEST(Version, HeaderLibraryAndProjectAgree) {
  EXPECT_STREQ(FORGIA_VERSION_STRING, fg_version());
  EXPECT_EQ(FORGIA_VERSION_NUMBER, fg_version_number());
  EXPECT_EQ(FORGIA_VERSION_MAJOR * 10000 + FORGIA_VERSION_MINOR * 100 + FORGIA_VERSION_PATCH, fg_version_number());
  EXPECT_EQ(std::to_string(FORGIA_VERSION_MAJOR) + "." + std::to_string(FORGIA_VERSION_MINOR) + "." +
                std::to_string(FORGIA_VERSION_PATCH),
            std::string(fg_version()));
  EXPECT_STREQ(FORGIA_PROJECT_VERSION, fg_version());
  EXPECT_LT(FORGIA_VERSION_MINOR, 100);
  EXPECT_LT(FORGIA_VERSION_PATCH, 100);
}
