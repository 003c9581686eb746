{
  # One addon, several kernel variants: each ISA is its own static library compiled with its own flags,
  # and cpu.cc picks one at load time (never -march=native, so a prebuilt binary runs on any CPU of its arch).
  "target_defaults": {
    "cflags_cc": ["-std=c++17", "-O3", "-fvisibility=hidden", "-ffp-contract=fast", "-fno-math-errno", "-Wno-maybe-uninitialized"],
    "cflags_cc!": ["-fno-exceptions"],
    "cflags!": ["-fno-exceptions"],
    "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "src"],
    "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED"],
    "xcode_settings": {
      "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
      "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
      "GCC_SYMBOLS_PRIVATE_EXTERN": "YES",
      "MACOSX_DEPLOYMENT_TARGET": "11.0",
      "OTHER_CPLUSPLUSFLAGS": ["-O3", "-ffp-contract=fast"]
    },
    "msvs_settings": { "VCCLCompilerTool": { "ExceptionHandling": 1, "AdditionalOptions": ["/std:c++17"] } },
    # Windows: the kernels use GCC/Clang vector extensions, which MSVC's cl.exe does not compile, so the
    # ClangCL toolset (Visual Studio's "C++ Clang tools for Windows") is required. Untested so far.
    "conditions": [["OS=='win'", { "msbuild_toolset": "ClangCL", "defines": ["NOMINMAX", "WIN32_LEAN_AND_MEAN"] }]]
  },
  "targets": [
    {
      "target_name": "kernels_scalar",
      "type": "static_library",
      "sources": ["src/isa/isa_scalar.cc"],
      "defines": ["MLX_VARIANT=scalar"]
    },
    {
      "target_name": "mlxcel_core",
      "sources": [
        "src/addon.cc",
        "src/args.cc",
        "src/cpu.cc",
        "src/memory.cc",
        "src/threadpool.cc",
        "src/cpu_count.cc",
        "src/bind_matmul.cc",
        "src/bind_elementwise.cc",
        "src/bind_attention.cc",
        "src/bind_kv.cc",
        "src/bind_misc.cc",
        "src/bind_audio.cc",
        "src/bind_moe.cc",
        "src/bind_vision.cc"
      ],
      "dependencies": ["kernels_scalar"],
      "conditions": [
        ["target_arch=='x64'", {
          "dependencies": ["kernels_avx2", "kernels_avx2vnni", "kernels_avx512", "kernels_avx512vnni", "kernels_avx512amx"],
          "defines": ["MLX_HAVE_X86_VARIANTS=1"]
        }],
        ["target_arch=='arm64'", {
          "dependencies": ["kernels_neon", "kernels_neon_dotprod"],
          "defines": ["MLX_HAVE_NEON_VARIANT=1", "MLX_HAVE_NEON_DOTPROD_VARIANT=1"]
        }]
      ]
    }
  ],
  "conditions": [
    ["target_arch=='x64'", {
      "targets": [
        {
          "target_name": "kernels_avx2",
          "type": "static_library",
          "sources": ["src/isa/isa_avx2.cc"],
          "cflags_cc": ["-mavx2", "-mfma", "-mf16c"],
          "msvs_settings": { "VCCLCompilerTool": { "AdditionalOptions": ["/std:c++17", "-mavx2", "-mfma", "-mf16c"] } },
          "xcode_settings": { "OTHER_CPLUSPLUSFLAGS": ["-O3", "-ffp-contract=fast", "-mavx2", "-mfma", "-mf16c"] }
        },
        {
          "target_name": "kernels_avx2vnni",
          "type": "static_library",
          "sources": ["src/isa/isa_avx2vnni.cc"],
          "cflags_cc": ["-mavx2", "-mfma", "-mf16c", "-mavxvnni"],
          "msvs_settings": { "VCCLCompilerTool": { "AdditionalOptions": ["/std:c++17", "-mavx2", "-mfma", "-mf16c", "-mavxvnni"] } },
          "xcode_settings": { "OTHER_CPLUSPLUSFLAGS": ["-O3", "-ffp-contract=fast", "-mavx2", "-mfma", "-mf16c", "-mavxvnni"] }
        },
        {
          "target_name": "kernels_avx512",
          "type": "static_library",
          "sources": ["src/isa/isa_avx512.cc"],
          "cflags_cc": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx2", "-mfma", "-mf16c", "-mprefer-vector-width=512"],
          "msvs_settings": { "VCCLCompilerTool": { "AdditionalOptions": ["/std:c++17", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx2", "-mfma", "-mf16c"] } },
          "xcode_settings": { "OTHER_CPLUSPLUSFLAGS": ["-O3", "-ffp-contract=fast", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx2", "-mfma", "-mf16c"] }
        },
        {
          "target_name": "kernels_avx512vnni",
          "type": "static_library",
          "sources": ["src/isa/isa_avx512vnni.cc"],
          "cflags_cc": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512vnni", "-mavx2", "-mfma", "-mf16c", "-mprefer-vector-width=512"],
          "msvs_settings": { "VCCLCompilerTool": { "AdditionalOptions": ["/std:c++17", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512vnni", "-mavx2", "-mfma", "-mf16c"] } },
          "xcode_settings": { "OTHER_CPLUSPLUSFLAGS": ["-O3", "-ffp-contract=fast", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512vnni", "-mavx2", "-mfma", "-mf16c"] }
        },
        {
          "target_name": "kernels_avx512amx",
          "type": "static_library",
          "sources": ["src/isa/isa_avx512amx.cc"],
          "cflags_cc": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512vnni", "-mamx-tile", "-mamx-int8", "-mavx2", "-mfma", "-mf16c", "-mprefer-vector-width=512"],
          "msvs_settings": { "VCCLCompilerTool": { "AdditionalOptions": ["/std:c++17", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512vnni", "-mamx-tile", "-mamx-int8", "-mavx2", "-mfma", "-mf16c"] } },
          "xcode_settings": { "OTHER_CPLUSPLUSFLAGS": ["-O3", "-ffp-contract=fast", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512vnni", "-mamx-tile", "-mamx-int8", "-mavx2", "-mfma", "-mf16c"] }
        }
      ]
    }],
    ["target_arch=='arm64'", {
      "targets": [
        {
          "target_name": "kernels_neon",
          "type": "static_library",
          "sources": ["src/isa/isa_neon.cc"]
        },
        {
          "target_name": "kernels_neon_dotprod",
          "type": "static_library",
          "sources": ["src/isa/isa_neon_dotprod.cc"],
          "cflags_cc": ["-march=armv8.2-a+dotprod"],
          "xcode_settings": { "OTHER_CPLUSPLUSFLAGS": ["-O3", "-ffp-contract=fast", "-march=armv8.2-a+dotprod"] }
        }
      ]
    }]
  ]
}
