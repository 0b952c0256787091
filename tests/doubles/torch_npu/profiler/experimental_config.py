from typing import Optional, Union


class ProfilerLevel:
    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"
    Level_none = "Level_none"


class AiCMetrics:
    PipeUtilization = "ACL_AICORE_PIPE_UTILIZATION"
    ArithmeticUtilization = "ACL_AICORE_ARITHMETIC_UTILIZATION"
    Memory = "ACL_AICORE_MEMORY_BANDWIDTH"
    MemoryL0 = "ACL_AICORE_L0B_AND_WIDTH"
    MemoryUB = "ACL_AICORE_MEMORY_UB"
    ResourceConflictRatio = "ACL_AICORE_RESOURCE_CONFLICT_RATIO"
    L2Cache = "ACL_AICORE_L2_CACHE"
    MemoryAccess = "ACL_AICORE_MEMORY_ACCESS"
    AiCoreNone = "ACL_AICORE_NONE"


class ExportType:
    Db = "db"
    Text = "text"


class _ExperimentalConfig:
    def __init__(
        self,
        profiler_level: int = ProfilerLevel.Level0,
        aic_metrics: int = AiCMetrics.PipeUtilization,
        l2_cache: bool = False,
        msprof_tx: bool = False,
        mstx: bool = False,
        data_simplification: bool = True,
        record_op_args: bool = False,
        op_attr: bool = False,
        gc_detect_threshold: Optional[float] = None,
        export_type: Union[str, list] = ExportType.Text,
        host_sys: Optional[list] = None,
        mstx_domain_include: Optional[list] = None,
        mstx_domain_exclude: Optional[list] = None,
        sys_io: bool = False,
        sys_interconnection: bool = False,
    ):
        self.kwargs = dict(locals())
        self.kwargs.pop("self")
