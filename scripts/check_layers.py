#!/usr/bin/env python3
"""Refuses an upward include: folders are layers, and a file includes only headers of its own
layer and of the layers below it (docs/architecture.md, "Layers").

    scripts/check_layers.py [ROOT]     check the tree at ROOT (default: this checkout)
    scripts/check_layers.py --self-test

Every `#include "..."` of a file in a layer folder is resolved as the compiler resolves it (the
including file's folder, then src/, the repository root and apps/); the header found must lie
in the same layer or a lower one, and a header that no folder holds is an error too (a stale
path). A file under src/ outside every layer folder is an error, and so is a layer's
CMakeLists.txt that names a source outside its folder: each folder's library builds only its own
files. Exit status 1 with one line per fault, 0 when the tree is clean. --self-test plants
faults in small trees of its own and checks that each is refused (ctest: layers_checker).

The same walk holds the device to one query: the CUDA calls that ask what the device is and how
much memory it has (cudaGetDeviceCount, cudaGetDeviceProperties, cudaMemGetInfo) appear in
src/gpu/cuda_device.cpp alone, whose query_device hands its answer to the plan and the backends.
"""

import os
import re
import shutil
import sys
import tempfile

# The layers from the bottom up: (name, folder). A file belongs to the layer of the longest
# folder that holds it; apps/ and tests/ sit above every layer and are not checked.
LAYERS = [
    ("base", "src/base"),  # errors, sizes, mapped and atomic files, threads, Philox, the version
    ("text", "src/text"),  # corpus inputs, tokens, the chunks and table of the count
    ("vocab", "src/vocab"),  # the vocabulary, its word lists, packed words, counts as runs
    ("model", "src/model"),  # samplers, negative pools, host tables, model, storage, optimizers
    ("corpus", "src/corpus"),  # the encoded corpus, whole or streamed
    ("io", "src/io"),  # file formats and the export
    ("eval", "src/eval"),  # analogies, similarities, neighbours
    ("config", "src/config"),  # the settings, their option table, device and placement choices
    ("backend", "src/backend"),  # the Backend interface
    ("cpu", "src/backend/cpu"),  # the CPU backend (the reference)
    ("kernels", "kernels"),  # CUDA kernels and their launchers
    ("gpu", "src/gpu"),  # the CUDA backend and its plan
    ("dist", "src/dist"),  # training over ranks
    ("train", "src/train"),  # the trainer, checkpoints, the backend factory
    ("bench", "apps/bench"),  # `pagedw2v bench`
    ("app", "apps/pagedw2v"),  # the command line
]
# Where a quoted include is looked for after the including file's folder (the include
# directories the libraries export).
INCLUDE_ROOTS = ["src", ".", "apps"]
SOURCE_SUFFIXES = (".hpp", ".cpp", ".cu", ".cuh", ".h")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# The device's one query (the file that may ask) and the calls that ask.
DEVICE_QUERY_FILE = "src/gpu/cuda_device.cpp"
DEVICE_QUERY = re.compile(r"\b(cudaGetDeviceCount|cudaGetDeviceProperties|cudaMemGetInfo)\s*\(")


def layer_of(path):
    """(rank, name) of the layer holding `path` (relative, '/'-separated), or None."""
    best = None
    for rank, (name, folder) in enumerate(LAYERS):
        if path.startswith(folder + "/") and (best is None or len(folder) > len(LAYERS[best][1])):
            best = rank
    return None if best is None else (best, LAYERS[best][0])


def walk_sources(root, top):
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")


def resolve(root, including, header):
    for base in [os.path.dirname(including)] + INCLUDE_ROOTS:
        candidate = os.path.normpath(os.path.join(base, header)).replace(os.sep, "/")
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def check_cmake(root, folder, faults):
    """A layer's CMakeLists.txt lists only sources of its own folder, by their bare names."""
    path = os.path.join(root, folder, "CMakeLists.txt")
    if not os.path.isfile(path):
        return
    text = re.sub(r"#[^\n]*", "", open(path, encoding="utf-8").read())
    for token in re.findall(r"[^\s()\"]+\.(?:cpp|cu)\b", text):
        if "/" in token or "$" in token or not os.path.isfile(os.path.join(root, folder, token)):
            faults.append(f"{folder}/CMakeLists.txt: builds {token}, which is not a file of "
                          f"{folder}/ (each folder's library builds only its own files)")


def check(root):
    faults = []
    tops = sorted({folder.split("/")[0] for _, folder in LAYERS})
    for top in tops:
        for path in walk_sources(root, top):
            own = layer_of(path)
            if own is None:
                if path.startswith("src/"):
                    faults.append(f"{path}: in no layer (src/ holds only the layer folders)")
                continue
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    query = DEVICE_QUERY.search(line.split("//")[0])
                    if query and path != DEVICE_QUERY_FILE:
                        faults.append(f"{path}:{number}: calls {query.group(1)}: the device is "
                                      f"asked once, in {DEVICE_QUERY_FILE} (query_device)")
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    header = match.group(1)
                    target = resolve(root, path, header)
                    if target is None:
                        faults.append(f"{path}:{number}: includes \"{header}\", which no folder "
                                      "of the tree holds")
                        continue
                    theirs = layer_of(target)
                    if theirs is None:
                        faults.append(f"{path}:{number}: includes \"{header}\" ({target}), which "
                                      "is in no layer")
                    elif theirs[0] > own[0]:
                        faults.append(f"{path}:{number}: upward include: layer {own[1]} includes "
                                      f"\"{header}\" of layer {theirs[1]}")
    for _, folder in LAYERS:
        check_cmake(root, folder, faults)
    return faults


def self_test():
    """Plants each fault in a small tree and checks that it is refused, and that a clean tree
    (downward and same-layer includes, a header beside its file) passes."""

    def tree(files):
        root = tempfile.mkdtemp(prefix="check_layers.")
        for path, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                f.write(text)
        return root

    clean = {
        "src/base/error.hpp": "#pragma once\n",
        "src/model/sampler.hpp": '#pragma once\n#include "base/error.hpp"\n',
        "src/model/sampler.cpp": '#include "model/sampler.hpp"\n#include "base/error.hpp"\n',
        "src/model/CMakeLists.txt": "add_library(pagedw2v_model STATIC sampler.cpp)\n",
        "src/backend/backend.hpp": '#pragma once\n#include "model/sampler.hpp"\n',
        "src/backend/cpu/cpu_backend.hpp": '#pragma once\n#include "backend/backend.hpp"\n',
        "kernels/sgns.hpp": '#pragma once\n#include "model/sampler.hpp"\n',
        "src/gpu/plan.hpp": '#pragma once\n#include "kernels/sgns.hpp"\n',
        "src/gpu/cuda_device.cpp": "// cudaMemGetInfo( in a comment\nint n = cudaGetDeviceCount(&c);\n",
        "apps/pagedw2v/cli.hpp": '#pragma once\n#include "gpu/plan.hpp"\n',
        "apps/pagedw2v/main.cpp": '#include "cli.hpp"\n',
    }
    cases = [
        ("a clean tree", {}, None),
        ("an upward include", {"src/base/error.hpp": '#pragma once\n#include "model/sampler.hpp"\n'},
         "src/base/error.hpp:2: upward include: layer base includes \"model/sampler.hpp\" of layer "
         "model"),
        ("an include of a layer above from a kernel",
         {"kernels/sgns.hpp": '#pragma once\n#include "gpu/plan.hpp"\n'},
         "kernels/sgns.hpp:2: upward include: layer kernels includes \"gpu/plan.hpp\" of layer gpu"),
        ("the interface including its implementation",
         {"src/backend/backend.hpp": '#pragma once\n#include "backend/cpu/cpu_backend.hpp"\n'},
         "src/backend/backend.hpp:2: upward include: layer backend includes "
         "\"backend/cpu/cpu_backend.hpp\" of layer cpu"),
        ("a stale path", {"src/model/sampler.hpp": '#pragma once\n#include "error.hpp"\n'},
         "src/model/sampler.hpp:2: includes \"error.hpp\", which no folder of the tree holds"),
        ("a file outside the layers", {"src/stray.hpp": "#pragma once\n"},
         "src/stray.hpp: in no layer"),
        ("a library that builds another folder's file",
         {"src/model/CMakeLists.txt": "add_library(pagedw2v_model STATIC sampler.cpp "
                                      "${PROJECT_SOURCE_DIR}/src/gpu/plan.cpp)\n"},
         "src/model/CMakeLists.txt: builds ${PROJECT_SOURCE_DIR}/src/gpu/plan.cpp"),
        ("a second device query",
         {"src/gpu/plan.hpp": '#pragma once\n#include "kernels/sgns.hpp"\n'
                              "size_t f, t; cudaMemGetInfo(&f, &t);\n"},
         "src/gpu/plan.hpp:3: calls cudaMemGetInfo"),
        ("a device query in a comment elsewhere",
         {"src/gpu/plan.hpp": '#pragma once\n#include "kernels/sgns.hpp"\n'
                              "// not cudaGetDeviceProperties(&p, 0) here\n"}, None),
    ]
    failed = 0
    for what, change, expected in cases:
        files = dict(clean)
        files.update(change)
        root = tree(files)
        faults = check(root)
        shutil.rmtree(root)
        if expected is None:
            ok = not faults
        else:
            ok = len(faults) == 1 and faults[0].startswith(expected)
        print(("ok    " if ok else "FAIL  ") + what + (": " + "; ".join(faults) if faults else ""))
        failed += not ok
    return 1 if failed else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    faults = check(os.path.abspath(root))
    for fault in faults:
        print(fault)
    if faults:
        print(f"{len(faults)} fault(s): includes go to the file's own layer or one below "
              "(docs/architecture.md, \"Layers\")")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
