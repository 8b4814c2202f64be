# The README's main job, end to end (about 300 MB written and read back).
add_test(NAME slow.demo COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_demo.sh $<TARGET_FILE:forgia_cli>)
set_tests_properties(slow.demo PROPERTIES LABELS slow TIMEOUT 900)
