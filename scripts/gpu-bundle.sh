#!/usr/bin/env bash
# Builds what scripts/gpu-check.sh runs on the device machine and packs it into gpu-bundle/ (git-ignored), to be
# carried there: the device's image has the CUDA driver, nvcc 13 with cuBLAS, PyTorch and transformers, but none of
# oneDNN, yaml-cpp, utf8proc, cairo, ..., and nothing can be installed on it (issue 20).
#
#   build-gpu-bundle/    a release build with -Dcuda=enabled -Dnative=false (-march=native code could SIGILL on the
#                        device's CPU); only headroom and the two GPU test executables are compiled
#   gpu-bundle/payload.tar.xz   bin/ (headroom, test_cuda_backend, test_gpu_parity, stripped) and lib/: every shared
#                        library they load except glibc's, the CUDA runtime and cuBLAS (the device's own, which match
#                        its driver); libstdc++ and libgcc_s go to lib/compat/, used only where the device's are too old
#   gpu-bundle/run.sh NAME ARGS...   unpacks the payload once and runs bin/NAME with LD_LIBRARY_PATH set
#
# Checks, before packing, that ldd resolves every other library to a file in the bundle, and that the bundle is under
# 64 MiB (the device tool carries at most 64 MiB, the working tree included). Prints the bundle's size.
set -euo pipefail
cd "$(dirname "$0")/.."

build="build-gpu-bundle"
bundle=gpu-bundle
stage=$build/stage
# the libraries the device supplies: glibc, the CUDA driver, runtime and cuBLAS
device_libs='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|'
device_libs+='libcuda|libcudart|libcublas|libcublasLt)\.so'
compat_libs='^(libstdc\+\+|libgcc_s)\.so'

if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
# -Dmpi=disabled: with MPI the CUDA build links NCCL, and libnccl.so alone (218 MB) is over what the device tool carries
if [ ! -f $build/build.ninja ]; then
  meson setup $build --buildtype=release -Dcuda=enabled -Dnative=false -Dmpi=disabled >/dev/null
fi
meson configure $build -Dmpi=disabled
meson compile -C $build -j "$(nproc)" headroom:executable tests/test_cuda_backend tests/test_gpu_parity | tail -n 1

rm -rf $stage
mkdir -p $stage/bin $stage/lib/compat
for exe in headroom tests/test_cuda_backend tests/test_gpu_parity; do
  strip -o "$stage/bin/${exe##*/}" "$build/$exe"
done

# every library the binaries load, transitively (ldd lists them all), except the device's own
ldd $stage/bin/* | awk '/=>/ {print $1, $3}' | sort -u | while read -r name path; do
  [[ $name =~ $device_libs ]] && continue
  [ "$path" = "not" ] && { echo "gpu-bundle: $name is not found here" >&2; exit 1; }
  dest=$stage/lib
  [[ $name =~ $compat_libs ]] && dest=$stage/lib/compat
  cp -L "$path" "$dest/$name"
done

# the check the device relies on: with the bundle's path set, nothing but the device's own libraries comes from
# outside it
unresolved=$(LD_LIBRARY_PATH="$PWD/$stage/lib:$PWD/$stage/lib/compat" ldd $stage/bin/* $stage/lib/*.so* |
  awk '/=>/ {print $1, $3}' | sort -u | while read -r name path; do
    [[ $name =~ $device_libs ]] && continue
    [[ $path == "$PWD/$stage/"* ]] || echo "  $name => $path"
  done)
if [ -n "$unresolved" ]; then
  echo "gpu-bundle: libraries resolved outside the bundle:" >&2
  echo "$unresolved" >&2
  exit 1
fi

rm -rf $bundle
mkdir -p $bundle
XZ_OPT="-6 -T2" tar -C $stage -cJf $bundle/payload.tar.xz bin lib
cat >$bundle/run.sh <<'RUN'
#!/usr/bin/env bash
# Runs one of the bundle's binaries (written by scripts/gpu-bundle.sh):
#   run.sh headroom|test_cuda_backend|test_gpu_parity ARGS...   or   run.sh ldd (where their libraries come from)
# The payload is unpacked once, into $HR_BUNDLE_DIR or a directory under ${TMPDIR:-/tmp} named by its checksum. The
# CUDA runtime and cuBLAS come from the device's toolkit (nvcc's, or /usr/local/cuda).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
payload=$here/payload.tar.xz
dir=${HR_BUNDLE_DIR:-${TMPDIR:-/tmp}/headroom-bundle-$(cksum <"$payload" | cut -d' ' -f1)}
if [ ! -d "$dir/bin" ]; then
  tmp=$(mktemp -d "$dir.XXXXXX")
  # tar needs xz; Python's tarfile does not
  tar -C "$tmp" -xJf "$payload" 2>/dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$payload" "$tmp"
  mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"  # another run may have unpacked it first
fi
cuda_home=/usr/local/cuda
if command -v nvcc >/dev/null; then cuda_home=$(dirname "$(dirname "$(command -v nvcc)")"); fi
export LD_LIBRARY_PATH="$dir/lib:$cuda_home/lib64:$cuda_home/lib:${LD_LIBRARY_PATH:-}"
# the build machine's libstdc++ / libgcc_s only where the device's lack a symbol version the binaries need
if "$dir/bin/headroom" --help 2>&1 >/dev/null | grep -q "GLIBCXX_\|CXXABI_\|GCC_[0-9]"; then
  export LD_LIBRARY_PATH="$dir/lib/compat:$LD_LIBRARY_PATH"
fi
name=${1:?usage: run.sh headroom|test_cuda_backend|test_gpu_parity|ldd ARGS...}
shift
[ "$name" = ldd ] && exec ldd "$dir"/bin/*  # where each library comes from, with this LD_LIBRARY_PATH
exec "$dir/bin/$name" "$@"
RUN
chmod +x $bundle/run.sh

bytes=$(du -sb $bundle | cut -f1)
echo "gpu-bundle: $bundle/ is $((bytes / 1024 / 1024)) MiB ($bytes bytes; unpacked $(du -sh $stage | cut -f1)):"
(cd $stage && find bin lib -type f | sort | xargs ls -l | awk '{printf "  %-28s %6.1f MB\n", $9, $5 / 1e6}')
[ "$bytes" -lt $((64 * 1024 * 1024)) ] || { echo "gpu-bundle: over 64 MiB" >&2; exit 1; }
