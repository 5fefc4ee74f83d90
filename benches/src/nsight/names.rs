//! The strings of the generated Nsight export: PyTorch/cuBLAS/NCCL kernel
//! kinds with their launch geometry, the CUDA runtime API names (with the
//! `_v<version>` suffixes nsys writes), NVTX registered strings and thread
//! names, all interned into `StringIds` up front in a fixed order.

use std::collections::HashMap;

/// A kernel as the profiler sees it.
pub struct KernelKind {
    pub demangled: &'static str,
    pub short: &'static str,
    pub mangled: &'static str,
    /// Typical duration.
    pub base_ns: i64,
    pub registers: i64,
    pub grid: [i64; 3],
    pub block: [i64; 3],
    pub static_smem: i64,
    pub dynamic_smem: i64,
}

/// `[demangled, short, mangled]` names and the rest of a kernel kind.
const fn kernel(
    [demangled, short, mangled]: [&'static str; 3],
    base_ns: i64,
    registers: i64,
    grid: [i64; 3],
    block: [i64; 3],
    smem: (i64, i64),
) -> KernelKind {
    KernelKind {
        demangled,
        short,
        mangled,
        base_ns,
        registers,
        grid,
        block,
        static_smem: smem.0,
        dynamic_smem: smem.1,
    }
}

pub const FORWARD: &[KernelKind] = &[
    kernel(
        [
            "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
            "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
            "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
        ],
        180_000,
        222,
        [96, 8, 1],
        [128, 1, 1],
        (0, 81920),
    ),
    kernel(
        [
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, T2, T3)",
            "vectorized_elementwise_kernel",
            "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEENS_6detail5ArrayIPcLi3EEEEEviT0_T1_",
        ],
        9_000,
        16,
        [2048, 1, 1],
        [128, 1, 1],
        (0, 0),
    ),
    kernel(
        [
            "void at::native::<unnamed>::vectorized_layer_norm_kernel<float, float>(int, T2, const T1 *, const T1 *, const T1 *, T2 *, T2 *, T1 *)",
            "vectorized_layer_norm_kernel",
            "_ZN2at6native55_GLOBAL__N__vectorized_layer_norm_kernelIffEEviT0_PKT_S6_S6_PS3_S7_PS4_",
        ],
        14_000,
        32,
        [4096, 1, 1],
        [128, 1, 1],
        (64, 0),
    ),
    kernel(
        [
            "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t>, false, true, false>(Flash_fwd_params)",
            "flash_fwd_kernel",
            "_Z16flash_fwd_kernelI23Flash_fwd_kernel_traitsILi128ELi128ELi64ELi4ELb0ELb0EN7cutlass6half_tEELb0ELb1ELb0EEv16Flash_fwd_params",
        ],
        420_000,
        255,
        [16, 32, 8],
        [128, 1, 1],
        (0, 49152),
    ),
    kernel(
        [
            "void <unnamed>::softmax_warp_forward<float, float, float, 10, false, false>(T2 *, const T1 *, int, int, int, const bool *, int, bool)",
            "softmax_warp_forward",
            "_ZN37_GLOBAL__N__softmax_warp_forwardIfffLi10ELb0ELb0EEEvPT0_PKT_iiiPKbib",
        ],
        22_000,
        40,
        [1024, 1, 1],
        [128, 1, 1],
        (0, 0),
    ),
];

pub const BACKWARD: &[KernelKind] = &[
    kernel(
        [
            "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x256x32_stage3_warpsize2x4x1_tensor16x8x16_kernel",
            "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x256x32_stage3_warpsize2x4x1_tensor16x8x16_kernel",
            "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x256x32_stage3_warpsize2x4x1_tensor16x8x16_kernel",
        ],
        260_000,
        232,
        [48, 8, 1],
        [256, 1, 1],
        (0, 98304),
    ),
    kernel(
        [
            "void at::native::<unnamed>::layer_norm_grad_input_kernel<float, float>(const T1 *, const T1 *, const T2 *, const T2 *, const T1 *, T1 *, int)",
            "layer_norm_grad_input_kernel",
            "_ZN2at6native55_GLOBAL__N__layer_norm_grad_input_kernelIffEEvPKT_S5_PKT0_S8_S5_PS3_i",
        ],
        31_000,
        48,
        [4096, 1, 1],
        [256, 1, 1],
        (2048, 0),
    ),
    kernel(
        [
            "void at::native::vectorized_elementwise_kernel<4, at::native::threshold_kernel_impl<float>(at::TensorIteratorBase &, T1, T1)::[lambda(float, float) (instance 1)], at::detail::Array<char *, 3>>(int, T2, T3)",
            "vectorized_elementwise_kernel",
            "_ZN2at6native29vectorized_elementwise_kernelILi4EZNS0_21threshold_kernel_implIfEEvRNS_18TensorIteratorBaseET_S5_EUlffE_NS_6detail5ArrayIPcLi3EEEEEviT0_T1_",
        ],
        11_000,
        18,
        [2048, 1, 1],
        [128, 1, 1],
        (0, 0),
    ),
    kernel(
        [
            "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::half_t>, true, false, false>(Flash_bwd_params)",
            "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel",
            "_Z44flash_bwd_dq_dk_dv_loop_seqk_parallel_kernelI23Flash_bwd_kernel_traitsILi128ELi64ELi128ELi8ELi2ELi4ELi2ELb0ELb0EN7cutlass6half_tEELb1ELb0ELb0EEv16Flash_bwd_params",
        ],
        900_000,
        255,
        [8, 32, 8],
        [256, 1, 1],
        (0, 114688),
    ),
];

/// The optimizer kernels, also the nodes of the captured CUDA graph.
pub const OPTIMIZER_GRAPH: &[KernelKind] = &[
    kernel(
        [
            "void at::native::<unnamed>::multi_tensor_apply_kernel<at::native::<unnamed>::TensorListMetadata<4>, at::native::<unnamed>::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float *, double, double, double, double, double, double, bool, float *, float *>(T1, T2, T3...)",
            "multi_tensor_apply_kernel",
            "_ZN2at6native57_GLOBAL__N__multi_tensor_apply_kernelINS1_18TensorListMetadataILi4EEENS1_20FusedAdamMathFunctorIfLi4ELNS0_9ADAM_MODEE1ELb0EEEJPfddddddbS7_S7_EEEvT_T0_DpT1_",
        ],
        65_000,
        72,
        [320, 1, 1],
        [512, 1, 1],
        (0, 0),
    ),
    kernel(
        [
            "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator ()(at::TensorIterator &)::[lambda(float, float) (instance 1)]>, unsigned int, float, 4, 4>>(T3)",
            "reduce_kernel",
            "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_11sum_functorIfffEclERNS_14TensorIteratorEEUlffE_EEjfLi4ELi4EEEEEvT1_",
        ],
        18_000,
        32,
        [216, 1, 1],
        [32, 16, 1],
        (16, 0),
    ),
    kernel(
        [
            "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>, at::detail::Array<char *, 2>>(int, T2, T3)",
            "vectorized_elementwise_kernel",
            "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEENS_6detail5ArrayIPcLi2EEEEEviT0_T1_",
        ],
        7_000,
        16,
        [1024, 1, 1],
        [128, 1, 1],
        (0, 0),
    ),
];

pub const ALL_REDUCE: KernelKind = kernel(
    [
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm *, unsigned long, ncclWork *)",
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
        "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LLP11ncclDevCommmP8ncclWork",
    ],
    350_000,
    96,
    [2, 1, 1],
    [640, 1, 1],
    (4352, 0),
);

/// NVTX registered ranges of a step.
#[derive(Debug, Clone, Copy)]
pub enum Phase {
    Data,
    Forward,
    Backward,
    Optimizer,
}

impl Phase {
    fn text(self) -> &'static str {
        match self {
            Phase::Data => "data",
            Phase::Forward => "forward",
            Phase::Backward => "backward",
            Phase::Optimizer => "optimizer",
        }
    }

    /// ARGB as NVTX stores it.
    pub fn color(self) -> i64 {
        match self {
            Phase::Data => 0xFF1F_77B4,
            Phase::Forward => 0xFF2C_A02C,
            Phase::Backward => 0xFFD6_2728,
            Phase::Optimizer => 0xFF94_67BD,
        }
    }
}

const HELPER_THREADS: &[&str] = &[
    "[NSys]",
    "[NSys Comms]",
    "CUPTI worker thread",
    "pt_data_worker",
];

/// `StringIds` (id = index) and the ids the generator refers to.
pub struct Strings {
    pub table: Vec<String>,
    ids: HashMap<String, i64>,
    /// Launching threads first, then the helper threads.
    pub thread_names: Vec<i64>,
    pub launch_kernel: i64,
    pub graph_launch: i64,
    pub memcpy_async: i64,
    pub memset_async: i64,
    pub stream_sync: i64,
    pub event_record: i64,
    pub checkpoint: i64,
}

impl Strings {
    pub fn new(threads: usize) -> Strings {
        let mut s = Strings {
            table: vec!["[Unknown]".to_string()],
            ids: HashMap::new(),
            thread_names: Vec::new(),
            launch_kernel: 0,
            graph_launch: 0,
            memcpy_async: 0,
            memset_async: 0,
            stream_sync: 0,
            event_record: 0,
            checkpoint: 0,
        };
        s.launch_kernel = s.intern("cudaLaunchKernel_v7000");
        s.graph_launch = s.intern("cudaGraphLaunch_v10000");
        s.memcpy_async = s.intern("cudaMemcpyAsync_v3020");
        s.memset_async = s.intern("cudaMemsetAsync_v3020");
        s.stream_sync = s.intern("cudaStreamSynchronize_v3020");
        s.event_record = s.intern("cudaEventRecord_v3020");
        let kinds = FORWARD
            .iter()
            .chain(BACKWARD)
            .chain(OPTIMIZER_GRAPH)
            .chain([&ALL_REDUCE]);
        for k in kinds {
            s.intern(k.mangled);
            s.intern(k.demangled);
            s.intern(k.short);
        }
        for p in [
            Phase::Data,
            Phase::Forward,
            Phase::Backward,
            Phase::Optimizer,
        ] {
            s.intern(p.text());
        }
        s.checkpoint = s.intern("checkpoint");
        for i in 0..threads {
            let name = match i {
                0 => "python3".to_string(),
                i => format!("pt_autograd_{}", i - 1),
            };
            let id = s.intern(&name);
            s.thread_names.push(id);
        }
        for name in HELPER_THREADS {
            let id = s.intern(name);
            s.thread_names.push(id);
        }
        s
    }

    fn intern(&mut self, value: &str) -> i64 {
        if let Some(&id) = self.ids.get(value) {
            return id;
        }
        let id = self.table.len() as i64;
        self.table.push(value.to_string());
        self.ids.insert(value.to_string(), id);
        id
    }

    fn id(&self, value: &str) -> i64 {
        self.ids.get(value).copied().unwrap_or(0)
    }

    pub fn phase(&self, phase: Phase) -> i64 {
        self.id(phase.text())
    }

    /// (demangled, short, mangled) ids.
    pub fn kernel(&self, k: &KernelKind) -> [i64; 3] {
        [self.id(k.demangled), self.id(k.short), self.id(k.mangled)]
    }
}
