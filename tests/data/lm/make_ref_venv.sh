#!/usr/bin/env bash
# The reference's venv for the runtime's live checks (tests/lm.cmake): transformers + torch + peft,
# run on the CPU, with as little of CUDA as the machine allows.
#   make_ref_venv.sh VENV [PYTHON]
# PyPI's torch wheel is the CUDA build: its libraries are linked against cuDNN, NCCL, cuBLAS
# ... (about 4 GB of nvidia-* wheels, plus 1 GB of triton), and `import torch` fails without
# them even on the CPU. So, smallest first:
#   1. the CPU build from download.pytorch.org/whl/cpu (~200 MB), where that index is reachable;
#   2. PyPI's torch without its dependencies, plus the four libraries a CUDA 13 toolkit on the
#      loader's path does not provide in the version torch needs (cuFile, cuSPARSELt,
#      NVSHMEM, NCCL: ~660 MB);
#   3. failing that, every CUDA library torch declares (still no triton, no cuda-bindings).
# Each stage ends with `import torch` and a CPU matmul; the first that passes is kept.
# Idempotent: a venv whose stamp names the same pins is left as it is.
set -euo pipefail
venv=$1
python=${2:-python3}
torch_pin=2.15.0
pins="transformers==5.25.0 gguf==0.19.0 numpy sentencepiece==0.2.3 filelock fsspec jinja2 networkx sympy typing-extensions setuptools psutil pyyaml"
nodeps="accelerate==1.16.0 peft==0.22.0"
# torch 2.15.0's own pins (its Requires-Dist and cuda-toolkit 13.2.2's extras).
cuda_min="nvidia-cufile==1.17.1.22 nvidia-cusparselt-cu13==0.8.1 nvidia-nvshmem-cu13==3.7.2 nvidia-nccl-cu13==2.30.7"
cuda_rest="nvidia-cudnn-cu13==9.26.0.51 nvidia-cublas==13.4.1.3 nvidia-cuda-runtime==13.2.86 nvidia-cufft==12.2.0.57
  nvidia-cusolver==12.2.0.11 nvidia-cusparse==12.7.10.12 nvidia-cuda-nvrtc==13.2.86 nvidia-nvjitlink==13.5.37
  nvidia-cuda-cupti==13.2.86 nvidia-nvtx==13.2.86 nvidia-cuda-cccl==13.3.5.0.6"
stamp="$venv/forgia-ref-venv.stamp"
want="torch==$torch_pin $pins | $nodeps"
if [ -f "$stamp" ] && [ "$(head -1 "$stamp")" = "$want" ]; then
  exit 0
fi
start=$(date +%s)
rm -rf "$venv"
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
"${pip[@]}" $pins
"${pip[@]}" --no-deps $nodeps
works() { "$venv/bin/python" -c 'import torch, transformers, accelerate, peft, gguf; assert torch.randn(8, 8).matmul(torch.randn(8, 8)).isfinite().all()' 2>/dev/null; }
how=""
if "${pip[@]}" --no-deps --timeout 20 --retries 0 --index-url https://download.pytorch.org/whl/cpu "torch==$torch_pin+cpu" 2>/dev/null && works; then
  how="the CPU wheel (download.pytorch.org)"
else
  "${pip[@]}" --no-deps "torch==$torch_pin"
  "${pip[@]}" --no-deps $cuda_min
  if works; then
    how="PyPI's torch + cuFile, cuSPARSELt, NVSHMEM, NCCL (the rest from the system's CUDA)"
  else
    "${pip[@]}" --no-deps $cuda_rest
    works || { "$venv/bin/python" -c 'import torch'; exit 1; }
    how="PyPI's torch + every CUDA library it declares"
  fi
fi
printf '%s\n%s\n' "$want" "$how" > "$stamp"
echo "make_ref_venv: $venv ready in $(( $(date +%s) - start )) s: $how ($(du -sh "$venv" | cut -f1))"
