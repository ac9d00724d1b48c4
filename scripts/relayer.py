#!/usr/bin/env python3
"""Folders as layers: moves the files of src/ into one folder per layer, rewrites every path
that names them, and writes one CMake library per folder.

    scripts/relayer.py          run at the top of a clean checkout of the flat layout

What it does, in order:
1. Places every file of src/: a file of the table below goes to its layer's folder (a .hpp and
   its .cpp by their common name); a file in src/ itself that the table does not name goes to the
   lowest layer that holds every header it includes (so that its includes are downward), and is
   printed; a file already in a folder of its own (src/io/, src/gpu/, ...) stays there.
2. `git mv`s the files, so that history follows them.
3. Rewrites every `#include "..."` of src/, kernels/, apps/, tests/ and scripts/ that names a file
   of src/ to the file's new path from src/ ("config.hpp" -> "config/config.hpp"), each block of
   quoted includes sorted again as clang-format sorts it.
4. Rewrites the paths that name moved files in the other text of the tree (comments, docs,
   scripts, CMake files): "src/config.cpp" -> "src/config/config.cpp", "train/cpu_backend.hpp"
   -> "backend/cpu/cpu_backend.hpp", "src/vocab.*" -> "src/vocab/vocab.*"; and the library names
   pagedw2v_cuda -> pagedw2v_gpu, pagedw2v_core -> pagedw2v_cpu in CMake files.
   Then clang-format (the repository's .clang-format) on every C++ file it changed.
5. Writes src/CMakeLists.txt (the layers in order), one CMakeLists.txt per layer folder with the
   sources present in it (explicit lists; the few built only with CUDA or MPI named below, any
   other file built always in its folder's library, which links privately the libraries its
   files include: nlohmann_json, HDF5, zlib, zstd), and kernels/CMakeLists.txt; registers the
   ctest tests `layers` and `layers_checker` (scripts/check_layers.py).
The order of the layers is scripts/check_layers.py's LAYERS, which the check enforces; each
layer's library links the one under it in that table.
"""

import difflib
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_layers import LAYERS, INCLUDE_ROOTS, SOURCE_SUFFIXES  # noqa: E402

# Where each file of the flat layout goes: a name (a .hpp and its .cpp alike) under src/ -> the
# layer's folder under src/.
PLACES = {
    "base": ["error", "byte_size", "mapped_file", "worker_threads", "huge_pages", "free_heap",
             "string_index", "philox", "version", "io/atomic_file"],
    "text": ["text_source", "text_chunks", "tokenizer", "utf8", "word_table", "phrases",
             "phrase_stream"],
    "vocab": ["vocab", "word_list", "packed_words", "count_list", "vocab_file"],
    "model": ["sampler", "negative_pool", "host_table", "model", "storage", "params", "optimizer"],
    "corpus": ["corpus", "corpus_stream"],
    "config": ["config", "options", "foreign_flags"],
    "backend": ["backend"],
    "backend/cpu": ["train/cpu_backend", "train/sgns_cpu"],
}
# The layers' folders under src/ in order (kernels/ is its own folder at the top).
SRC_LAYERS = [folder[len("src/"):] for _, folder in LAYERS if folder.startswith("src/")]

# Sources built only under a condition; any other source of a folder is built always.
GPU_PLAIN = ["gpu_plan.cpp", "piece_cuts.cpp"]  # src/gpu/: plain C++, tested without CUDA
DIST_MPI = ["mpi_comm.cpp", "row_exchange.cpp", "owner_steps.cpp", "sharded_backend.cpp",
            "replica_backend.cpp", "mpi_ranks.cpp"]
DIST_MPI_CUDA = ["nccl_comm.cpp", "part_backend.cpp", "part_rotation.cpp",
                 "gpu_replica_backend.cpp"]
DIST_NO_MPI = ["no_mpi.cpp"]

# The flat layout's CMake files this script replaces, as it knows them (git blob ids); a tree
# whose files differ gets the difference printed, to carry over by hand.
KNOWN_CMAKE = {
    "src/CMakeLists.txt": "7b4a618fa8e590618616816b633a9d22abed6b1d",
    "kernels/CMakeLists.txt": "9c300b05ab96ad4eb914bf8d8e9591d5cfe8179c",
}


def sh(*args, check=True, capture=True):
    result = subprocess.run(args, check=check, text=True,
                            stdout=subprocess.PIPE if capture else None,
                            stderr=subprocess.DEVNULL if not check else None)
    return result.stdout if capture else None


def stem(path):
    return os.path.splitext(path)[0]


def list_files(tops):
    out = []
    for top in tops:
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if d != "build" and not d.startswith("."))
            for name in sorted(filenames):
                out.append(os.path.join(dirpath, name).replace(os.sep, "/"))
    return out


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def write(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def includes_of(path, files):
    """The files of the tree that `path` includes (resolved as the compiler does)."""
    found = []
    for line in read(path).splitlines():
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if m:
            target = resolve(path, m.group(1), files)
            if target:
                found.append(target)
    return found


def resolve(including, header, files):
    for base in [os.path.dirname(including)] + INCLUDE_ROOTS:
        candidate = os.path.normpath(os.path.join(base, header)).replace(os.sep, "/")
        if candidate in files:
            return candidate
    return None


def plan_moves(files):
    """old path -> new path for every file of src/ that moves; prints the files placed by rule."""
    known = {}
    for folder, names in PLACES.items():
        for name in names:
            known[name] = folder
    src = [f for f in files if f.startswith("src/") and f.endswith(SOURCE_SUFFIXES)]
    moves = {}
    unknown = {}
    for path in src:
        rel = path[len("src/"):]
        if stem(rel) in known:
            moves[path] = "src/" + known[stem(rel)] + "/" + os.path.basename(rel)
        elif "/" not in rel:
            unknown.setdefault(stem(rel), []).append(path)
    # Files of src/ the table does not name: the lowest layer holding all they include, found
    # in turns while such files include each other.
    fileset = set(files)
    rank = {folder: i for i, folder in enumerate(SRC_LAYERS)}

    def layer_rank(path):
        new = moves.get(path, path)
        folder = os.path.dirname(new)[len("src/"):]
        while folder and folder not in rank:
            folder = os.path.dirname(folder)
        return rank.get(folder)

    # Each such file starts in base and climbs to the highest layer among what it includes, the
    # others of its kind where they stand so far, until none climbs (files that include each
    # other end in the same layer).
    climbed = {name: 0 for name in unknown}
    changed = True
    while changed:
        changed = False
        for name, paths in sorted(unknown.items()):
            need = 0
            for p in paths:
                for t in includes_of(p, fileset):
                    if not t.startswith("src/") or stem(t) == stem(p):
                        continue
                    other = stem(t[len("src/"):])
                    r = climbed[other] if other in unknown else layer_rank(t)
                    if r is not None:
                        need = max(need, r)
            if need > climbed[name]:
                climbed[name] = need
                changed = True
    placed = {name: SRC_LAYERS[r] for name, r in climbed.items()}
    for name, paths in unknown.items():
        for p in paths:
            moves[p] = "src/" + placed[name] + "/" + os.path.basename(p)
    for name, folder in sorted(placed.items()):
        print(f"relayer: placed by its includes: src/{name}.* -> src/{folder}/ (not in the table)")
    others = sorted(f for f in src if f not in moves and "/" in f[len("src/"):]
                    and not any(f.startswith(k + "/") for k in ["src/" + s for s in SRC_LAYERS]))
    for f in others:
        print(f"relayer: stays in a folder that is no layer: {f}")
    return moves


def sort_include_blocks(text):
    """Sorts each run of consecutive `#include "..."` lines, as clang-format (IncludeBlocks:
    Preserve) does."""
    lines = text.split("\n")
    out = []
    i = 0
    quoted = re.compile(r'#include "([^"]+)"')
    while i < len(lines):
        if quoted.match(lines[i]):
            j = i
            while j < len(lines) and quoted.match(lines[j]):
                j += 1
            block = lines[i:j]
            out.extend(sorted(block, key=lambda l: quoted.match(l).group(1)) if len(block) > 1
                       else block)
            i = j
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out)


def rewrite_includes(path, old_path, moves, files):
    text = read(path)

    def repl(m):
        target = resolve(old_path, m.group(2), files)
        if target is None or not target.startswith("src/"):
            return m.group(0)
        new = moves.get(target, target)[len("src/"):]
        return m.group(1) + new + m.group(3)

    new_text = re.sub(r'^(\s*#\s*include\s+")([^"]+)(".*)$', repl, text, flags=re.M)
    if new_text != text:
        new_text = sort_include_blocks(new_text)
        write(path, new_text)
        return True
    return False


def path_patterns(moves):
    """(regex, replacement) pairs for the paths of moved files in prose, scripts and CMake."""
    pairs = {}
    for old, new in moves.items():
        o, n = stem(old[len("src/"):]), stem(new[len("src/"):])
        pairs[o] = n
    patterns = []
    # Longest first, so that "train/cpu_backend" is not read as "cpu_backend".
    for o in sorted(pairs, key=len, reverse=True):
        n = pairs[o]
        patterns.append((re.compile(r"(?<![\w/.-])src/" + re.escape(o) + r"(?=\.[A-Za-z*{])"),
                         "src/" + n))
        if "/" in o:
            patterns.append((re.compile(r"(?<![\w/.-])" + re.escape(o) + r"(?=\.[A-Za-z*{])"), n))
    return patterns


TEXT_SUFFIXES = (".md", ".txt", ".sh", ".py", ".cmake", ".toml", ".hpp", ".cpp", ".cu", ".cuh",
                 ".h", ".yml", ".yaml")


def rewrite_paths(path, patterns):
    text = read(path)
    new = text
    for regex, repl in patterns:
        new = regex.sub(repl, new)
    if os.path.basename(path) == "CMakeLists.txt":
        new = re.sub(r"\bpagedw2v_cuda\b", "pagedw2v_gpu", new)
        new = re.sub(r"\bpagedw2v_core\b", "pagedw2v_cpu", new)
    if new != text:
        write(path, new)
        return True
    return False


def sources(folder, suffixes=(".cpp", ".cu")):
    return sorted(f for f in os.listdir(folder)
                  if f.endswith(suffixes) and os.path.isfile(os.path.join(folder, f)))


def source_list(names, indent="  "):
    return "\n".join(indent + n for n in names)


# Libraries a layer links for the headers its files include (what others add lands in the
# right library): #include <...> pattern -> imported target.
EXTERNAL = [
    (r"nlohmann/", "nlohmann_json::nlohmann_json"),
    (r"hdf5\.h|H5\w*\.h", "hdf5::hdf5"),
    (r"zlib\.h", "ZLIB::ZLIB"),
]


def external_libs(folder):
    found = []
    for f in sorted(os.listdir(folder)):
        path = os.path.join(folder, f)
        if not (f.endswith(SOURCE_SUFFIXES) and os.path.isfile(path)):
            continue
        for header in re.findall(r"^\s*#\s*include\s+<([^>]+)>", read(path), flags=re.M):
            for pattern, lib in EXTERNAL:
                if re.match(pattern, header) and lib not in found:
                    found.append(lib)
    return found


def library(name, folder, below, comment, private_libs="", extra=""):
    """A layer's CMakeLists.txt: one library of the folder's sources, linking the layer below
    and, privately, the libraries its files include."""
    srcs = sources(folder)
    libs = private_libs.split()
    libs += [lib for lib in external_libs(folder) if lib not in libs]
    private_libs = " ".join(libs)
    # zstd is found by pkg-config, and may be missing: text links it in its own file.
    zstd = [f for f in os.listdir(folder) if f.endswith(SOURCE_SUFFIXES)
            and re.search(r"#\s*include\s+<zstd\.h>", read(os.path.join(folder, f)))]
    if zstd and folder != "src/text":
        extra += (f"if(ZSTD_FOUND)\n  target_link_libraries({name} PRIVATE PkgConfig::ZSTD)\n"
                  "endif()\n")
    head = "".join("# " + line + "\n" for line in comment.split("\n"))
    if srcs:
        link = (f"target_link_libraries({name} PUBLIC {below} PRIVATE pagedw2v_flags"
                f"{' ' + private_libs if private_libs else ''})")
        if len(link) > 100:
            link = link.replace(" PRIVATE ", "\n  PRIVATE ", 1)
        text = f"{head}add_library({name} STATIC\n{source_list(srcs)})\n{link}\n"
    else:
        text = (f"{head}add_library({name} INTERFACE)\n"
                f"target_link_libraries({name} INTERFACE {below})\n")
    return text + extra


def below(layer, skip=()):
    """The library of the layer under `layer` in LAYERS (skipping the layers in `skip`): the one
    a layer's library links, so that reordering LAYERS reorders the links."""
    names = [name for name, folder in LAYERS if not folder.startswith("apps/")]
    i = names.index(layer) - 1
    while names[i] in skip:
        i -= 1
    return "pagedw2v_" + names[i]


def write_cmake():
    w = {}
    w["src/CMakeLists.txt"] = """\
# One library per layer, from the bottom up; each links the layer below it, so that a layer's
# files include their own headers and those of the layers below, never above
# (docs/architecture.md, "Layers"; scripts/check_layers.py refuses an upward include). Headers are
# included by their folder from src/ ("model/sampler.hpp"), kernels from the repository root
# ("kernels/sgns.hpp").
""" + "".join(
        ("if(PAGEDW2V_HAVE_CUDA)\n  add_subdirectory(${PROJECT_SOURCE_DIR}/kernels "
         "${PROJECT_BINARY_DIR}/kernels)\nendif()\n") if folder == "kernels"
        else f"add_subdirectory({folder[len('src/'):]})\n" for _, folder in LAYERS
        if folder.startswith("src/") or folder == "kernels")
    w["src/base/CMakeLists.txt"] = library(
        "pagedw2v_base", "src/base", "Eigen3::Eigen Threads::Threads",
        "base: errors, byte sizes, mapped files, files written whole (atomic_file), worker threads,\n"
        "huge pages, Philox, the version.",
        extra="""\
target_include_directories(pagedw2v_base PUBLIC ${PROJECT_SOURCE_DIR}/src)
# The version `pagedw2v --version` prints and the files it writes record (version.cpp's version()).
set_property(SOURCE version.cpp APPEND PROPERTY COMPILE_DEFINITIONS
  PAGEDW2V_VERSION="${PROJECT_VERSION}")
""")
    w["src/text/CMakeLists.txt"] = library(
        "pagedw2v_text", "src/text", below("text"),
        "text: the corpus inputs (plain, gzip, zstd, standard input), tokens, the count's chunks\n"
        "and table.", private_libs="ZLIB::ZLIB",
        extra="""\
if(ZSTD_FOUND)
  target_link_libraries(pagedw2v_text PRIVATE PkgConfig::ZSTD)
  target_compile_definitions(pagedw2v_text PUBLIC PAGEDW2V_HAVE_ZSTD=1)
endif()
""")
    w["src/vocab/CMakeLists.txt"] = library(
        "pagedw2v_vocab", "src/vocab", below("vocab"),
        "vocab: the vocabulary, its words end to end and packed by slices, the counts as runs.",
        private_libs="ZLIB::ZLIB")
    w["src/model/CMakeLists.txt"] = library(
        "pagedw2v_model", "src/model", below("model"),
        "model: the training parameters, samplers, negative pools, host tables and their storage,\n"
        "the model, the optimizers' rules (compiled for host and device alike).",
        extra="""\
# The optimizers' loops take square roots of sums of squares; without errno for sqrtf the
# compiler vectorises them (a negative argument still gives NaN; nothing reads errno).
set_source_files_properties(optimizer.cpp PROPERTIES
  COMPILE_OPTIONS $<$<CXX_COMPILER_ID:GNU,Clang>:-fno-math-errno>)
""")
    w["src/corpus/CMakeLists.txt"] = library(
        "pagedw2v_corpus", "src/corpus", below("corpus"),
        "corpus: the encoded corpus and its work blocks, held whole or streamed.")
    w["src/io/CMakeLists.txt"] = library(
        "pagedw2v_io", "src/io", below("io"),
        "io: npy, HDF5, the word2vec formats, reading any of them, the export.",
        private_libs="hdf5::hdf5 ZLIB::ZLIB")
    w["src/eval/CMakeLists.txt"] = library(
        "pagedw2v_eval", "src/eval", below("eval"),
        "eval: analogies, word-pair similarity, neighbours.")
    w["src/config/CMakeLists.txt"] = library(
        "pagedw2v_config", "src/config", below("config"),
        "config: every setting of a run and the one option table that fills it (flags, TOML,\n"
        "resume, --help); device, placement and GPU options.",
        extra="""\
if(tomlplusplus_FOUND)
  target_link_libraries(pagedw2v_config PRIVATE tomlplusplus::tomlplusplus)
  target_compile_definitions(pagedw2v_config PRIVATE PAGEDW2V_HAVE_TOML=1)
endif()
""")
    w["src/backend/CMakeLists.txt"] = library(
        "pagedw2v_backend", "src/backend", below("backend"),
        "backend: the interface the trainer trains through (backend.hpp).")
    w["src/backend/cpu/CMakeLists.txt"] = library(
        "pagedw2v_cpu", "src/backend/cpu", below("cpu"),
        "cpu: the CPU backend, word2vec's Hogwild over threads; the reference every kernel is\n"
        "tested against.")
    kernels = sources("kernels")
    w["kernels/CMakeLists.txt"] = f"""\
# kernels: the CUDA kernels that training runs, each behind a host launcher (kernels/<op>.hpp).
# Kernels only a benchmark or a test runs live beside their users (apps/bench, tests).
# Architectures come from CMAKE_CUDA_ARCHITECTURES, which the top-level file sets to 90 (Hopper:
# H100/H200, the GPU the performance figures are measured on) unless given.
add_library(pagedw2v_kernels STATIC
{source_list(kernels)})
# Kernel headers are included as "kernels/<op>.hpp", so a name never shadows one of src/.
target_include_directories(pagedw2v_kernels PUBLIC ${{PROJECT_SOURCE_DIR}})
# The kernels' random bits come from cuRAND's device generator (kernels/device_draws.cuh), which is
# header-only: there is no cuRAND library to link.
target_link_libraries(pagedw2v_kernels PUBLIC {below("kernels")} CUDA::cudart PRIVATE pagedw2v_flags)
# -lineinfo: profilers and compute-sanitizer map SASS back to source lines at no run-time cost.
target_compile_options(pagedw2v_kernels PRIVATE
  $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo --expt-relaxed-constexpr>
  $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${{PAGEDW2V_WARN_SPILLS}}>>:-Xptxas=-warn-spills>)
set_target_properties(pagedw2v_kernels PROPERTIES
  CUDA_SEPARABLE_COMPILATION OFF
  POSITION_INDEPENDENT_CODE ON)
"""
    gpu_all = sources("src/gpu")
    gpu_plain = [f for f in gpu_all if f in GPU_PLAIN]
    gpu_cuda = [f for f in gpu_all if f not in GPU_PLAIN]
    w["src/gpu/CMakeLists.txt"] = f"""\
# gpu: the CUDA backend over the kernels. Its plan and its piece cuts are plain C++, built and
# tested without CUDA; the rest is built when CUDA is found.
add_library(pagedw2v_gpu STATIC
{source_list(gpu_plain)})
target_link_libraries(pagedw2v_gpu PUBLIC {below("gpu", skip=("kernels",))} PRIVATE pagedw2v_flags)
if(PAGEDW2V_HAVE_CUDA)
  target_sources(pagedw2v_gpu PRIVATE
{source_list(gpu_cuda, "    ")})
  target_link_libraries(pagedw2v_gpu PUBLIC pagedw2v_kernels CUDA::cudart)
  set_target_properties(pagedw2v_gpu PROPERTIES POSITION_INDEPENDENT_CODE ON)
endif()
"""
    dist_all = sources("src/dist")
    conditional = DIST_MPI + DIST_MPI_CUDA + DIST_NO_MPI
    dist_always = [f for f in dist_all if f not in conditional]
    pick = lambda names: [f for f in dist_all if f in names]  # noqa: E731
    w["src/dist/CMakeLists.txt"] = f"""\
# dist: training over ranks (ranks.hpp): the MPI parts when MPI is found, else a stand-in that
# refuses a launch with several ranks.
add_library(pagedw2v_dist STATIC
{source_list(dist_always)})
target_link_libraries(pagedw2v_dist PUBLIC {below("dist")} PRIVATE pagedw2v_flags)
if(PAGEDW2V_HAVE_MPI)
  target_sources(pagedw2v_dist PRIVATE
{source_list(pick(DIST_MPI), "    ")})
  target_link_libraries(pagedw2v_dist PUBLIC MPI::MPI_C)
  # A rank with a GPU trains its share there (gpu/row_set_trainer.hpp), or its parts of the
  # tables (dist/part_backend.hpp).
  if(PAGEDW2V_HAVE_CUDA)
    target_sources(pagedw2v_dist PRIVATE
{source_list(pick(DIST_MPI_CUDA), "      ")})
    target_compile_definitions(pagedw2v_dist PRIVATE PAGEDW2V_HAVE_CUDA=1)
    # The output parts move from GPU to GPU through NCCL when it is found (dist/part_rotation.hpp).
    if(PAGEDW2V_HAVE_NCCL)
      target_link_libraries(pagedw2v_dist PRIVATE NCCL::nccl)
      target_compile_definitions(pagedw2v_dist PRIVATE PAGEDW2V_HAVE_NCCL=1)
    endif()
  endif()
  # The C API alone: OpenMPI and MPICH otherwise bring their deprecated C++ bindings.
  target_compile_definitions(pagedw2v_dist PUBLIC PAGEDW2V_HAVE_MPI=1
    PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
else()
  target_sources(pagedw2v_dist PRIVATE
{source_list(pick(DIST_NO_MPI), "    ")})
endif()
"""
    w["src/train/CMakeLists.txt"] = library(
        "pagedw2v_train", "src/train", below("train"),
        "train: the trainer, the training set, checkpoints, run checks, progress, and the backend\n"
        "factory: the one place that knows every single-process backend.",
        private_libs="nlohmann_json::nlohmann_json",
        extra="""\
# run.json records the version of the build that wrote it.
target_compile_definitions(pagedw2v_train PRIVATE PAGEDW2V_VERSION="${PROJECT_VERSION}")
if(PAGEDW2V_HAVE_CUDA)
  target_compile_definitions(pagedw2v_train PRIVATE PAGEDW2V_HAVE_CUDA=1)
endif()
""")
    for path, text in w.items():
        write(path, text)
    return list(w)


LAYERS_TESTS = """
# layers: every #include goes to the including file's layer or one below, and each folder's
# library builds only its own files; layers_checker plants faults in trees of its own and checks
# that the check refuses each (scripts/check_layers.py).
find_program(PAGEDW2V_PYTHON3 python3)
if(PAGEDW2V_PYTHON3)
  add_test(NAME layers COMMAND ${PAGEDW2V_PYTHON3} ${PROJECT_SOURCE_DIR}/scripts/check_layers.py
    ${PROJECT_SOURCE_DIR})
  add_test(NAME layers_checker
    COMMAND ${PAGEDW2V_PYTHON3} ${PROJECT_SOURCE_DIR}/scripts/check_layers.py --self-test)
  set_tests_properties(layers layers_checker PROPERTIES TIMEOUT 60)
endif()
"""


def main():
    if sh("git", "status", "--porcelain").strip():
        sys.exit("relayer: the working tree has changes; commit or stash them first")
    if os.path.isdir("src/base"):
        sys.exit("relayer: src/base exists: the tree is already in layers")
    for path, blob in KNOWN_CMAKE.items():
        known = sh("git", "cat-file", "blob", blob, check=False)
        if known != read(path):
            diff = difflib.unified_diff(known.splitlines(True), read(path).splitlines(True),
                                        "known/" + path, path)
            print(f"relayer: {path} differs from the flat layout this script replaces; carry "
                  f"these changes over by hand:\n{''.join(diff)}")

    files = [f for f in list_files(["src", "kernels", "apps", "tests", "scripts"])]
    fileset = set(files)
    moves = plan_moves(files)

    # Includes first, while every file is where its includes were written for.
    code = [f for f in files if f.endswith(SOURCE_SUFFIXES)]
    rewritten = [f for f in code if rewrite_includes(f, f, moves, fileset)]

    for old, new in sorted(moves.items()):
        os.makedirs(os.path.dirname(new), exist_ok=True)
        sh("git", "mv", old, new)

    patterns = path_patterns(moves)
    tracked = sh("git", "ls-files").split("\n")
    text_files = [f for f in tracked if f and (f.endswith(TEXT_SUFFIXES) or f == ".ci/run")
                  and f != "scripts/relayer.py" and os.path.isfile(f)]
    prose = [f for f in text_files if rewrite_paths(f, patterns)]

    # Paths grown longer may push comment lines past the column limit: clang-format (the repo's
    # .clang-format) reflows them and checks the include order.
    changed = sorted({moves.get(f, f) for f in rewritten} | {f for f in prose
                                                            if f.endswith(SOURCE_SUFFIXES)})
    if shutil.which("clang-format"):
        sh("clang-format", "-i", *changed)
    else:
        print("relayer: clang-format not found: run it on the files this script changed")

    cmake = write_cmake()
    top = read("CMakeLists.txt")
    old_kernels = "add_subdirectory(src)\nif(PAGEDW2V_HAVE_CUDA)\n  add_subdirectory(kernels)\nendif()\n"
    if old_kernels in top:
        write("CMakeLists.txt", top.replace(old_kernels, "add_subdirectory(src)\n"))
    else:
        print("relayer: CMakeLists.txt: add_subdirectory(kernels) not found; src/CMakeLists.txt "
              "now adds kernels/ between the CPU backend and gpu/: remove it here by hand")
    tests = read("tests/CMakeLists.txt")
    if "check_layers.py" not in tests:
        write("tests/CMakeLists.txt", tests.rstrip("\n") + "\n" + LAYERS_TESTS)
    sh("git", "add", "-A", *[p for p in ["src", "kernels", "apps", "tests", "scripts", "docs",
                                         "CMakeLists.txt", "README.md", ".ci"] if os.path.exists(p)])

    print(f"relayer: moved {len(moves)} files, rewrote the includes of {len(rewritten)} and the "
          f"paths in {len(prose)}, wrote {len(cmake)} CMake files")
    for old, new in sorted(moves.items()):
        print(f"  {old} -> {new}")
    print("relayer: staged; next: build, then `ctest -R '^layers'` (scripts/check_layers.py)")


if __name__ == "__main__":
    main()
