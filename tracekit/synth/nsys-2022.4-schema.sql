-- Empty SQLite export schema of NVIDIA Nsight Systems version 2022.4.2.1-df9881f
-- Made by fixtures/nsys/make_schema_fixture.sh (nsys profile of /bin/sleep, QdstrmImporter,
-- nsys export --lazy=false --type sqlite). Holds every CREATE statement, the rows of the
-- constant ENUM_* / UnwindMethodType tables and the exporter-version metadata rows; no data
-- of the recording host (its time, host name, user and paths rows were dropped).
-- Load with sqlite3.Connection.executescript().
BEGIN;
CREATE TABLE StringIds (
    -- Consolidation of repetitive string values.

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- ID reference value.
    value                       TEXT      NOT NULL                     -- String value.
);
CREATE TABLE ThreadNames (
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Thread name
    priority                    INTEGER,                               -- Priority of the thread.
    globalTid                   INTEGER                                -- Serialized GlobalId.
);
CREATE TABLE ProcessStreams (
    globalPid                   INTEGER   NOT NULL,                    -- Serialized GlobalId.
    filenameId                  INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- File name
    contentId                   INTEGER   NOT NULL                     -- REFERENCES StringIds(id) -- Stream content
);
CREATE TABLE TARGET_INFO_SYSTEM_ENV (
    globalVid                   INTEGER   NOT NULL,                    -- Serialized GlobalId.
    devStateName                TEXT      NOT NULL,                    -- Device state name.
    name                        TEXT      NOT NULL,                    -- Property name.
    nameEnum                    INTEGER   NOT NULL,                    -- Property enum value.
    value                       TEXT      NOT NULL                     -- Property value.
);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (
    utcEpochNs                  INTEGER,                               -- UTC Epoch timestamp at start of the capture (ns).
    utcTime                     TEXT,                                  -- Start of the capture in UTC.
    localTime                   TEXT                                   -- Start of the capture in local time of target.
);
CREATE TABLE ANALYSIS_DETAILS (
    -- Details about the analysis session.

    globalVid                   INTEGER   NOT NULL,                    -- Serialized GlobalId.
    duration                    INTEGER   NOT NULL,                    -- The total time span of the entire trace (ns).
    startTime                   INTEGER   NOT NULL,                    -- Trace start timestamp in nanoseconds.
    stopTime                    INTEGER   NOT NULL                     -- Trace stop timestamp in nanoseconds.
);
CREATE TABLE TARGET_INFO_GPU (
    vmId                        INTEGER   NOT NULL,                    -- Serialized GlobalId.
    id                          INTEGER   NOT NULL,                    -- Device ID.
    name                        TEXT,                                  -- Device name.
    busLocation                 TEXT,                                  -- PCI bus location.
    isDiscrete                  INTEGER,                               -- True if discrete, false if integrated.
    l2CacheSize                 INTEGER,                               -- Size of L2 cache (B).
    totalMemory                 INTEGER,                               -- Total amount of memory on the device (B).
    memoryBandwidth             INTEGER,                               -- Amount of memory transferred (B).
    clockRate                   INTEGER,                               -- Clock frequency (Hz).
    smCount                     INTEGER,                               -- Number of multiprocessors on the device.
    pwGpuId                     INTEGER,                               -- PerfWorks GPU ID.
    uuid                        TEXT,                                  -- Device UUID.
    luid                        INTEGER,                               -- Device LUID.
    chipName                    TEXT,                                  -- Chip name.
    cuDevice                    INTEGER,                               -- CUDA device ID.
    ctxswDevPath                TEXT,                                  -- GPU context switch device node path.
    ctrlDevPath                 TEXT,                                  -- GPU control device node path.
    revision                    INTEGER,                               -- Revision number.
    nodeMask                    INTEGER,                               -- Device node mask.
    constantMemory              INTEGER,                               -- Memory available on device for __constant__ variables (B).
    maxIPC                      INTEGER,                               -- Maximum instructions per count.
    maxRegistersPerBlock        INTEGER,                               -- Maximum number of 32-bit registers available per block.
    maxShmemPerBlock            INTEGER,                               -- Maximum optin shared memory per block.
    maxShmemPerBlockOptin       INTEGER,                               -- Maximum optin shared memory per block.
    maxShmemPerSm               INTEGER,                               -- Maximum shared memory available per multiprocessor (B).
    maxRegistersPerSm           INTEGER,                               -- Maximum number of 32-bit registers available per multiprocessor.
    threadsPerWarp              INTEGER,                               -- Warp size in threads.
    asyncEngines                INTEGER,                               -- Number of asynchronous engines.
    maxWarpsPerSm               INTEGER,                               -- Maximum number of warps per multiprocessor.
    maxBlocksPerSm              INTEGER,                               -- Maximum number of blocks per multiprocessor.
    maxThreadsPerBlock          INTEGER,                               -- Maximum number of threads per block.
    maxBlockDimX                INTEGER,                               -- Maximum X-dimension of a block.
    maxBlockDimY                INTEGER,                               -- Maximum Y-dimension of a block.
    maxBlockDimZ                INTEGER,                               -- Maximum Z-dimension of a block.
    maxGridDimX                 INTEGER,                               -- Maximum X-dimension of a grid.
    maxGridDimY                 INTEGER,                               -- Maximum Y-dimension of a grid.
    maxGridDimZ                 INTEGER,                               -- Maximum Z-dimension of a grid.
    computeMajor                INTEGER,                               -- Major compute capability version number.
    computeMinor                INTEGER,                               -- Minor compute capability version number.
    smMajor                     INTEGER,                               -- Major multiprocessor version number.
    smMinor                     INTEGER                                -- Minor multiprocessor version number.
);
CREATE TABLE TARGET_INFO_XMC_SPEC (
    vmId                        INTEGER   NOT NULL,                    -- Serialized GlobalId.
    clientId                    INTEGER   NOT NULL,                    -- Client ID.
    type                        TEXT      NOT NULL,                    -- Client type.
    name                        TEXT      NOT NULL,                    -- Client name.
    groupId                     TEXT      NOT NULL                     -- Client group ID.
);
CREATE TABLE TARGET_INFO_PROCESS (
    processId                   INTEGER   NOT NULL,                    -- Process ID.
    openGlVersion               TEXT      NOT NULL,                    -- OpenGL version.
    correlationId               INTEGER   NOT NULL,                    -- Correlation ID of the kernel.
    nameId                      INTEGER   NOT NULL                     -- REFERENCES StringIds(id) -- Function name
);
CREATE TABLE TARGET_INFO_NVTX_CUDA_DEVICE (
    name                        TEXT      NOT NULL,                    -- CUDA device name assigned using NVTX.
    hwId                        INTEGER   NOT NULL,                    -- Hardware ID.
    vmId                        INTEGER   NOT NULL,                    -- VM ID.
    deviceId                    INTEGER   NOT NULL                     -- Device ID.
);
CREATE TABLE TARGET_INFO_NVTX_CUDA_CONTEXT (
    name                        TEXT      NOT NULL,                    -- CUDA context name assigned using NVTX.
    hwId                        INTEGER   NOT NULL,                    -- Hardware ID.
    vmId                        INTEGER   NOT NULL,                    -- VM ID.
    processId                   INTEGER   NOT NULL,                    -- Process ID.
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL                     -- Context ID.
);
CREATE TABLE TARGET_INFO_NVTX_CUDA_STREAM (
    name                        TEXT      NOT NULL,                    -- CUDA stream name assigned using NVTX.
    hwId                        INTEGER   NOT NULL,                    -- Hardware ID.
    vmId                        INTEGER   NOT NULL,                    -- VM ID.
    processId                   INTEGER   NOT NULL,                    -- Process ID.
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    streamId                    INTEGER   NOT NULL                     -- Stream ID.
);
CREATE TABLE TARGET_INFO_CUDA_NULL_STREAM (
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    hwId                        INTEGER   NOT NULL,                    -- Hardware ID.
    vmId                        INTEGER   NOT NULL,                    -- VM ID.
    processId                   INTEGER   NOT NULL,                    -- Process ID.
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL                     -- Context ID.
);
CREATE TABLE TARGET_INFO_CUDA_STREAM (
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    hwId                        INTEGER   NOT NULL,                    -- Hardware ID.
    vmId                        INTEGER   NOT NULL,                    -- VM ID.
    processId                   INTEGER   NOT NULL,                    -- Process ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    priority                    INTEGER   NOT NULL,                    -- Priority of the stream.
    flag                        INTEGER   NOT NULL                     -- Flags for stream creation.
);
CREATE TABLE TARGET_INFO_WDDM_CONTEXTS (
    context                     INTEGER   NOT NULL,
    engineType                  INTEGER   NOT NULL,
    nodeOrdinal                 INTEGER   NOT NULL,
    friendlyName                TEXT      NOT NULL
);
CREATE TABLE EXPORT_META_DATA (
    -- information about nsys export process

    name                        TEXT      NOT NULL,                    -- Name of export meta-data record
    value                       TEXT                                   -- Value of export meta-data record
);
CREATE TABLE ENUM_NSYS_EVENT_TYPE (
    -- Nsys event type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_NSYS_EVENT_CLASS (
    -- Nsys event class labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_GPU_CTX_SWITCH (
    -- GPU context switch labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (
    -- CUDA memcpy operation labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_CUDA_MEM_KIND (
    -- CUDA memory kind labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_CUDA_MEMPOOL_TYPE (
    -- CUDA mempool type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_CUDA_MEMPOOL_OPER (
    -- CUDA mempool operation labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_CUDA_DEV_MEM_EVENT_OPER (
    -- CUDA device mem event operation labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_CUDA_KRENEL_LAUNCH_TYPE (
    -- CUDA kernel launch type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_CUDA_SHARED_MEM_LIMIT_CONFIG (
    -- CUDA shared memory limit config labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_CUDA_UNIF_MEM_MIGRATION (
    -- CUDA unified memory migration cause labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_CUDA_UNIF_MEM_ACCESS_TYPE (
    -- CUDA unified memory access type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_CUDA_FUNC_CACHE_CONFIG (
    -- CUDA function cache config labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_CUPTI_SYNC_TYPE (
    -- CUPTI synchronization type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_STACK_UNWIND_METHOD (
    -- Stack unwind method labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_SAMPLING_THREAD_STATE (
    -- Sampling thread state labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_OPENGL_DEBUG_SOURCE (
    -- OpenGL debug source labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_OPENGL_DEBUG_TYPE (
    -- OpenGL debug type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_OPENGL_DEBUG_SEVERITY (
    -- OpenGL debug severity labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_VULKAN_PIPELINE_CREATION_FLAGS (
    -- Vulkan pipeline creation feedback flag labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_D3D12_HEAP_TYPE (
    -- D3D12 heap type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_D3D12_PAGE_PROPERTY (
    -- D3D12 CPU page property labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_D3D12_HEAP_FLAGS (
    -- D3D12 heap flag labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_D3D12_CMD_LIST_TYPE (
    -- D3D12 command list type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_OPENACC_DEVICE (
    -- OpenACC device type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_OPENACC_EVENT_KIND (
    -- OpenACC event type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_OPENMP_EVENT_KIND (
    -- OpenMP event kind labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_OPENMP_THREAD (
    -- OpenMP thread labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_OPENMP_DISPATCH (
    -- OpenMP dispatch labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_OPENMP_SYNC_REGION (
    -- OpenMP sync region labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_OPENMP_WORK (
    -- OpenMP work labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_OPENMP_MUTEX (
    -- OpenMP mutex labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_OPENMP_TASK_FLAG (
    -- OpenMP task flags labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_OPENMP_TASK_STATUS (
    -- OpenMP task status labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_SLI_TRANSER (
    -- OpenMP task status labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_DXGI_FORMAT (
    -- DXGI image format labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_NVDRIVER_EVENT_ID (
    -- NV-Driver event it labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_WDDM_PAGING_QUEUE_TYPE (
    -- WDDM paging queue type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_WDDM_PACKET_TYPE (
    -- WDDM packet type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_WDDM_ENGINE_TYPE (
    -- WDDM engine type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_WDDM_INTERRUPT_TYPE (
    -- WDDM DMA interrupt type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_WDDM_VIDMM_OP_TYPE (
    -- WDDM VidMm operation type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    bytes                       INTEGER   NOT NULL,                    -- Number of bytes transferred (B).
    copyKind                    INTEGER   NOT NULL,                    -- REFERENCES ENUM_CUDA_MEMCPY_OPER(id)
    deprecatedSrcId             INTEGER,                               -- Deprecated, use srcDeviceId instead.
    srcKind                     INTEGER,                               -- REFERENCES ENUM_CUDA_MEM_KIND(id)
    dstKind                     INTEGER,                               -- REFERENCES ENUM_CUDA_MEM_KIND(id)
    srcDeviceId                 INTEGER,                               -- Source device ID.
    srcContextId                INTEGER,                               -- Source context ID.
    dstDeviceId                 INTEGER,                               -- Destination device ID.
    dstContextId                INTEGER,                               -- Destination context ID.
    migrationCause              INTEGER,                               -- REFERENCES ENUM_CUDA_UNIF_MEM_MIGRATION(id)
    graphNodeId                 INTEGER,                               -- REFERENCES CUDA_GRAPH_EVENTS(graphNodeId)
    virtualAddress              INTEGER                                -- Virtual base address of the page/s being transferred.
);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    value                       INTEGER   NOT NULL,                    -- Value assigned to memory.
    bytes                       INTEGER   NOT NULL,                    -- Number of bytes set (B).
    graphNodeId                 INTEGER,                               -- REFERENCES CUDA_GRAPH_EVENTS(graphNodeId)
    memKind                     INTEGER                                -- REFERENCES ENUM_CUDA_MEM_KIND(id)
);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    demangledName               INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Kernel function name w/ templates
    shortName                   INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Base kernel function name
    mangledName                 INTEGER,                               -- REFERENCES StringIds(id) -- Raw C++ mangled kernel function name
    launchType                  INTEGER,                               -- REFERENCES ENUM_CUDA_KRENEL_LAUNCH_TYPE(id)
    cacheConfig                 INTEGER,                               -- REFERENCES ENUM_CUDA_FUNC_CACHE_CONFIG(id)
    registersPerThread          INTEGER   NOT NULL,                    -- Number of registers required for each thread executing the kernel.
    gridX                       INTEGER   NOT NULL,                    -- X-dimension grid size.
    gridY                       INTEGER   NOT NULL,                    -- Y-dimension grid size.
    gridZ                       INTEGER   NOT NULL,                    -- Z-dimension grid size.
    blockX                      INTEGER   NOT NULL,                    -- X-dimension block size.
    blockY                      INTEGER   NOT NULL,                    -- Y-dimension block size.
    blockZ                      INTEGER   NOT NULL,                    -- Z-dimension block size.
    staticSharedMemory          INTEGER   NOT NULL,                    -- Static shared memory allocated for the kernel (B).
    dynamicSharedMemory         INTEGER   NOT NULL,                    -- Dynamic shared memory reserved for the kernel (B).
    localMemoryPerThread        INTEGER   NOT NULL,                    -- Amount of local memory reserved for each thread (B).
    localMemoryTotal            INTEGER   NOT NULL,                    -- Total amount of local memory reserved for the kernel (B).
    gridId                      INTEGER   NOT NULL,                    -- Unique grid ID of the kernel assigned at runtime.
    sharedMemoryExecuted        INTEGER,                               -- Shared memory size set by the driver.
    graphNodeId                 INTEGER,                               -- REFERENCES CUDA_GRAPH_EVENTS(graphNodeId)
    sharedMemoryLimitConfig     INTEGER                                -- REFERENCES ENUM_CUDA_SHARED_MEM_LIMIT_CONFIG(id)
);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- Correlation ID of the synchronization API to which this result is associated.
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    syncType                    INTEGER   NOT NULL,                    -- REFERENCES ENUM_CUPTI_SYNC_TYPE(id)
    eventId                     INTEGER   NOT NULL                     -- Event ID for which the synchronization API is called.
);
CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT (
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- Correlation ID of the event record API to which this result is associated.
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    eventId                     INTEGER   NOT NULL                     -- Event ID for which the event record API is called.
);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- ID used to identify events that this function call has triggered.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    returnValue                 INTEGER   NOT NULL,                    -- Return value of the function call.
    callchainId                 INTEGER                                -- REFERENCES CUDA_CALLCHAINS(id)
);
CREATE TABLE CUDNN_EVENTS (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    nameId                      INTEGER   NOT NULL                     -- REFERENCES StringIds(id) -- Function name
);
CREATE TABLE CUBLAS_EVENTS (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    nameId                      INTEGER   NOT NULL                     -- REFERENCES StringIds(id) -- Function name
);
CREATE TABLE CUDA_GRAPH_EVENTS (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    graphNodeId                 INTEGER   NOT NULL,                    -- REFERENCES CUDA_GRAPH_EVENTS(graphNodeId)
    originalGraphNodeId         INTEGER                                -- Reference to the original graph node ID, if cloned node.
);
CREATE TABLE CUDA_UM_CPU_PAGE_FAULT_EVENTS (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    globalPid                   INTEGER   NOT NULL,                    -- Serialized GlobalId.
    address                     INTEGER   NOT NULL,                    -- Virtual address of the page that faulted.
    originalFaultPc             INTEGER,                               -- Program counter of the CPU instruction that caused the page fault.
    CpuInstruction              INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    module                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Module name
    unresolvedFaultPc           INTEGER                                -- True if the program counter was not resolved.
);
CREATE TABLE CUDA_UM_GPU_PAGE_FAULT_EVENTS (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalPid                   INTEGER   NOT NULL,                    -- Serialized GlobalId.
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    address                     INTEGER   NOT NULL,                    -- Virtual address of the page that faulted.
    numberOfPageFaults          INTEGER   NOT NULL,                    -- Number of page faults for the same page.
    faultAccessType             INTEGER   NOT NULL                     -- REFERENCES ENUM_CUDA_UNIF_MEM_ACCESS_TYPE(id)
);
CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    globalPid                   INTEGER   NOT NULL,                    -- Serialized GlobalId.
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    address                     INTEGER   NOT NULL,                    -- Virtual address of the allocation/deallocation.
    pc                          INTEGER   NOT NULL,                    -- Program counter of the allocation/deallocation.
    bytes                       INTEGER   NOT NULL,                    -- Number of bytes allocated/deallocated (B).
    memKind                     INTEGER   NOT NULL,                    -- REFERENCES ENUM_CUDA_MEM_KIND(id)
    memoryOperationType         INTEGER   NOT NULL,                    -- REFERENCES ENUM_CUDA_DEV_MEM_EVENT_OPER(id)
    name                        TEXT,                                  -- Variable name, if available.
    correlationId               INTEGER,                               -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
    localMemoryPoolAddress      INTEGER,                               -- Base address of the local memory pool used
    localMemoryPoolReleaseThreshold   INTEGER,                         -- Release threshold of the local memory pool used
    localMemoryPoolSize         INTEGER,                               -- Size of the local memory pool used
    localMemoryPoolUtilizedSize   INTEGER,                             -- Utilized size of the local memory pool used
    importedMemoryPoolAddress   INTEGER,                               -- Base address of the imported memory pool used
    importedMemoryPoolProcessId   INTEGER                              -- Process ID of the imported memory pool used
);
CREATE TABLE CUDA_GPU_MEMORY_POOL_EVENTS (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    globalPid                   INTEGER   NOT NULL,                    -- Serialized GlobalId.
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    address                     INTEGER   NOT NULL,                    -- The base virtual address of the memory pool.
    operationType               INTEGER   NOT NULL,                    -- REFERENCES ENUM_CUDA_MEMPOOL_OPER(id)
    poolType                    INTEGER   NOT NULL,                    -- REFERENCES ENUM_CUDA_MEMPOOL_TYPE(id)
    correlationId               INTEGER,                               -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
    minBytesToKeep              INTEGER,                               -- Minimum number of bytes to keep of the memory pool.
    localMemoryPoolReleaseThreshold   INTEGER,                         -- Release threshold of the local memory pool used
    localMemoryPoolSize         INTEGER,                               -- Size of the local memory pool used
    localMemoryPoolUtilizedSize   INTEGER                              -- Utilized size of the local memory pool used
);
CREATE TABLE CUDA_CALLCHAINS (
    id                          INTEGER   NOT NULL,                    -- Part of PRIMARY KEY (id, stackDepth).
    symbol                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    module                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Module name
    unresolved                  INTEGER,                               -- True if the symbol was not resolved.
    originalIP                  INTEGER,                               -- Instruction pointer value.
    stackDepth                  INTEGER   NOT NULL,                    -- Zero-base index of the given function in call stack.

    PRIMARY KEY (id, stackDepth)
);
CREATE TABLE NVTX_EVENTS (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER,                               -- Event end timestamp (ns).
    eventType                   INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_TYPE(id)
    rangeId                     INTEGER,                               -- Correlation ID returned from a nvtxRangeStart call.
    category                    INTEGER,                               -- User-controlled ID that can be used to group events.
    color                       INTEGER,                               -- Encoded ARGB color value.
    text                        TEXT,                                  -- Optional text message for non registered strings.
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    endGlobalTid                INTEGER,                               -- Serialized GlobalId.
    textId                      INTEGER,                               -- REFERENCES StringIds(id) -- Registered NVTX domain
    domainId                    INTEGER,                               -- User-controlled ID that can be used to group events.
    uint64Value                 INTEGER,                               -- One of possible payload value union members.
    int64Value                  INTEGER,                               -- One of possible payload value union members.
    doubleValue                 REAL,                                  -- One of possible payload value union members.
    uint32Value                 INTEGER,                               -- One of possible payload value union members.
    int32Value                  INTEGER,                               -- One of possible payload value union members.
    floatValue                  REAL,                                  -- One of possible payload value union members.
    jsonTextId                  INTEGER,                               -- One of possible payload value union members.
    jsonText                    TEXT                                   -- One of possible payload value union members.
);
CREATE TABLE OPENGL_API (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_TYPE(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    endGlobalTid                INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- First ID matching an API call to GPU workloads.
    endCorrelationId            INTEGER,                               -- Last ID matching an API call to GPU workloads.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- First function name
    endNameId                   INTEGER,                               -- REFERENCES StringIds(id) -- Last function name
    returnValue                 INTEGER   NOT NULL,                    -- Return value of the function call.
    frameId                     INTEGER,                               -- Index of the graphics frame starting from 1.
    contextId                   INTEGER,                               -- Context ID.
    gpu                         INTEGER,                               -- GPU index.
    display                     INTEGER                                -- Display ID.
);
CREATE TABLE OPENGL_WORKLOAD (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_TYPE(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    endGlobalTid                INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- First ID matching an API call to GPU workloads.
    endCorrelationId            INTEGER,                               -- Last ID matching an API call to GPU workloads.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- First function name
    endNameId                   INTEGER,                               -- REFERENCES StringIds(id) -- Last function name
    returnValue                 INTEGER   NOT NULL,                    -- Return value of the function call.
    frameId                     INTEGER,                               -- Index of the graphics frame starting from 1.
    contextId                   INTEGER,                               -- Context ID.
    gpu                         INTEGER,                               -- GPU index.
    display                     INTEGER                                -- Display ID.
);
CREATE TABLE KHR_DEBUG_EVENTS (
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_TYPE(id)
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER,                               -- Event end timestamp (ns).
    textId                      INTEGER,                               -- REFERENCES StringIds(id) -- Debug marker/group text
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    source                      INTEGER,                               -- REFERENCES ENUM_OPENGL_DEBUG_SOURCE(id)
    khrdType                    INTEGER,                               -- REFERENCES ENUM_OPENGL_DEBUG_TYPE(id)
    id                          INTEGER,                               -- KHR event ID.
    severity                    INTEGER,                               -- REFERENCES ENUM_OPENGL_DEBUG_SEVERITY(id)
    correlationId               INTEGER,                               -- ID used to correlate KHR CPU trace to GPU trace.
    context                     INTEGER                                -- Context ID.
);
CREATE TABLE OSRT_API (
    -- OS runtime libraries traced to gather information about low-level userspace APIs.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    returnValue                 INTEGER   NOT NULL,                    -- Return value of the function call.
    nestingLevel                INTEGER,                               -- Zero-base index of the nesting level.
    callchainId                 INTEGER   NOT NULL                     -- REFERENCES OSRT_CALLCHAINS(id)
);
CREATE TABLE OSRT_CALLCHAINS (
    -- Callchains attached to OSRT events, depending on selected profiling settings.

    id                          INTEGER   NOT NULL,                    -- Part of PRIMARY KEY (id, stackDepth).
    symbol                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    module                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Module name
    kernelMode                  INTEGER,                               -- True if kernel mode.
    thumbCode                   INTEGER,                               -- True if thumb code.
    unresolved                  INTEGER,                               -- True if the symbol was not resolved.
    specialEntry                INTEGER,                               -- True if artifical entry added during processing callchain.
    originalIP                  INTEGER,                               -- Instruction pointer value.
    unwindMethod                INTEGER,                               -- REFERENCES ENUM_STACK_UNWIND_METHOD(id)
    stackDepth                  INTEGER   NOT NULL,                    -- Zero-base index of the given function in call stack.

    PRIMARY KEY (id, stackDepth)
);
CREATE TABLE UnwindMethodType (
    number                      INTEGER   PRIMARY KEY,
    name                        TEXT      NOT NULL
);
CREATE TABLE PROFILER_OVERHEAD (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    returnValue                 INTEGER   NOT NULL                     -- Return value of the function call.
);
CREATE TABLE SCHED_EVENTS (
    -- Thread scheduling events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    cpu                         INTEGER   NOT NULL,                    -- ID of CPU this thread was scheduled in or out.
    isSchedIn                   INTEGER   NOT NULL,                    -- 0 if thread was scheduled out, non-zero otherwise.
    globalTid                   INTEGER                                -- Serialized GlobalId.
);
CREATE TABLE COMPOSITE_EVENTS (
    -- Thread sampling events.

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- ID of the composite event.
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    cpu                         INTEGER,                               -- ID of CPU this thread was running on.
    threadState                 INTEGER,                               -- REFERENCES ENUM_SAMPLING_THREAD_STATE(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    cpuCycles                   INTEGER   NOT NULL                     -- Value of Performance Monitoring Unit (PMU) counter.
);
CREATE TABLE SAMPLING_CALLCHAINS (
    -- Callchain entries obtained from composite events, used to construct function table views.

    id                          INTEGER   NOT NULL,                    -- REFERENCES COMPOSITE_EVENTS(id)
    symbol                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    module                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Module name
    kernelMode                  INTEGER,                               -- True if kernel mode.
    thumbCode                   INTEGER,                               -- True if thumb code.
    unresolved                  INTEGER,                               -- True if the symbol was not resolved.
    specialEntry                INTEGER,                               -- True if artifical entry added during processing callchain.
    originalIP                  INTEGER,                               -- Instruction pointer value.
    unwindMethod                INTEGER,                               -- REFERENCES ENUM_STACK_UNWIND_METHOD(id)
    stackDepth                  INTEGER   NOT NULL,                    -- Zero-base index of the given function in call stack.

    PRIMARY KEY (id, stackDepth)
);
CREATE TABLE SLI_QUERIES (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    frameId                     INTEGER   NOT NULL,                    -- Index of the graphics frame starting from 1.
    occQueryIssued              INTEGER   NOT NULL,                    -- Occlusion query issued.
    occQueryAsked               INTEGER   NOT NULL,                    -- Occlusion query asked.
    eventQueryIssued            INTEGER   NOT NULL,                    -- Event query issued.
    eventQueryAsked             INTEGER   NOT NULL,                    -- Event query asked.
    numberOfTransferEvents      INTEGER   NOT NULL,                    -- Number of transfer events.
    amountOfTransferredData     INTEGER   NOT NULL                     -- Cumulative size of resource data that was transferred.
);
CREATE TABLE SLI_P2P (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    frameId                     INTEGER   NOT NULL,                    -- Index of the graphics frame starting from 1.
    transferSkipped             INTEGER   NOT NULL,                    -- Number of transfers that were skipped.
    srcGpu                      INTEGER   NOT NULL,                    -- Source GPU ID.
    dstGpu                      INTEGER   NOT NULL,                    -- Destination GPU ID.
    numSubResources             INTEGER   NOT NULL,                    -- Number of sub-resources to transfer.
    resourceSize                INTEGER   NOT NULL,                    -- Size of resource.
    subResourceIdx              INTEGER   NOT NULL,                    -- Sub-resource index.
    smplWidth                   INTEGER,                               -- Sub-resource surface width in samples.
    smplHeight                  INTEGER,                               -- Sub-resource surface height in samples.
    smplDepth                   INTEGER,                               -- Sub-resource surface depth in samples.
    bytesPerElement             INTEGER,                               -- Number of bytes per element.
    dxgiFormat                  INTEGER,                               -- REFERENCES ENUM_DXGI_FORMAT(id)
    logSurfaceNames             TEXT,                                  -- Surface name.
    transferInfo                INTEGER,                               -- REFERENCES ENUM_SLI_TRANSER(id)
    isEarlyPushManagedByNvApi   INTEGER,                               -- True if early push managed by NVAPI. False otherwise.
    useAsyncP2pForResolve       INTEGER,                               -- True if async Peer-to-Peer used for resolve. False otherwise.
    transferFuncName            TEXT,                                  -- "A - BE" for asynchronous transfer, "S - BE" for synchronous transfer.
    regimeName                  TEXT,                                  -- Name of the regime scope that includes the resource.
    debugName                   TEXT,                                  -- Debug name assigned to the resource by the application code.
    bindType                    TEXT                                   -- Bind type.
);
CREATE TABLE SLI_STATS (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    countComplexFrames          INTEGER   NOT NULL,                    -- Complex frames count.
    countStats                  INTEGER   NOT NULL,                    -- Number of frame statistics collected for the inactive-time histogram.
    totalInactiveTime           INTEGER   NOT NULL,                    -- Total inactive time (μs).
    minPbSize                   INTEGER   NOT NULL,                    -- Min push buffer size.
    maxPbSize                   INTEGER   NOT NULL,                    -- Max push buffer size.
    totalPbSize                 INTEGER   NOT NULL                     -- Total push buffer size.
);
CREATE TABLE DX12_API (
    id                          INTEGER   NOT NULL   PRIMARY KEY,
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- First ID matching an API call to GPU workloads.
    endCorrelationId            INTEGER,                               -- Last ID matching an API call to GPU workloads.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    shortContextId              INTEGER,                               -- Short form of the COM interface object address.
    frameId                     INTEGER,                               -- Index of the graphics frame starting from 1.
    color                       INTEGER,                               -- Encoded ARGB color value.
    textId                      INTEGER,                               -- REFERENCES StringIds(id) -- PIX marker text
    commandListType             INTEGER,                               -- REFERENCES ENUM_D3D12_CMD_LIST_TYPE(id)
    objectNameId                INTEGER,                               -- REFERENCES StringIds(id) -- D3D12 object name
    longContextId               INTEGER                                -- Long form of the COM interface object address.
);
CREATE TABLE DX12_WORKLOAD (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- First ID matching an API call to GPU workloads.
    endCorrelationId            INTEGER,                               -- Last ID matching an API call to GPU workloads.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    shortContextId              INTEGER,                               -- Short form of the COM interface object address.
    frameId                     INTEGER,                               -- Index of the graphics frame starting from 1.
    gpu                         INTEGER,                               -- GPU index.
    color                       INTEGER,                               -- Encoded ARGB color value.
    textId                      INTEGER,                               -- REFERENCES StringIds(id) -- PIX marker text
    commandListType             INTEGER,                               -- REFERENCES ENUM_D3D12_CMD_LIST_TYPE(id)
    objectNameId                INTEGER,                               -- REFERENCES StringIds(id) -- D3D12 object name
    longContextId               INTEGER                                -- Long form of the COM interface object address.
);
CREATE TABLE DX12_MEMORY_OPERATION (
    gpu                         INTEGER,                               -- GPU index.
    rangeStart                  INTEGER,                               -- Offset denoting the beginning of a memory range (B).
    rangeEnd                    INTEGER,                               -- Offset denoting the end of a memory range (B).
    subresourceId               INTEGER,                               -- Subresource index.
    heapType                    INTEGER,                               -- REFERENCES ENUM_D3D12_HEAP_TYPE(id)
    heapFlags                   INTEGER,                               -- REFERENCES ENUM_D3D12_HEAP_FLAGS(id)
    cpuPageProperty             INTEGER,                               -- REFERENCES ENUM_D3D12_PAGE_PROPERTY(id)
    nvApiFlags                  INTEGER,                               -- NV specific flags. See docs for specifics.
    traceEventId                INTEGER   NOT NULL                     -- REFERENCES DX12_API(id)
);
CREATE TABLE VULKAN_API (
    id                          INTEGER   NOT NULL   PRIMARY KEY,
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- First ID matching an API call to GPU workloads.
    endCorrelationId            INTEGER,                               -- Last ID matching an API call to GPU workloads.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    contextId                   INTEGER                                -- Short form of the interface object address.
);
CREATE TABLE VULKAN_WORKLOAD (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- First ID matching an API call to GPU workloads.
    endCorrelationId            INTEGER,                               -- Last ID matching an API call to GPU workloads.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    gpu                         INTEGER,                               -- GPU index.
    contextId                   INTEGER,                               -- Short form of the interface object address.
    color                       INTEGER,                               -- Encoded ARGB color value.
    textId                      INTEGER                                -- REFERENCES StringIds(id) -- Vulkan CPU debug marker string
);
CREATE TABLE VULKAN_DEBUG_API (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- First ID matching an API call to GPU workloads.
    endCorrelationId            INTEGER,                               -- Last ID matching an API call to GPU workloads.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    contextId                   INTEGER,                               -- Short form of the interface object address.
    color                       INTEGER,                               -- Encoded ARGB color value.
    textId                      INTEGER                                -- REFERENCES StringIds(id) -- Vulkan CPU debug marker string
);
CREATE TABLE VULKAN_PIPELINE_CREATION_EVENTS (
    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- ID of the pipeline creation event.
    duration                    INTEGER,                               -- Event duration (ns).
    flags                       INTEGER,                               -- REFERENCES ENUM_VULKAN_PIPELINE_CREATION_FLAGS(id)
    traceEventId                INTEGER   NOT NULL                     -- REFERENCES VULKAN_API(id) -- ID of the attached vulkan API.
);
CREATE TABLE VULKAN_PIPELINE_STAGE_EVENTS (
    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- ID of the pipeline stage event.
    duration                    INTEGER,                               -- Event duration (ns).
    flags                       INTEGER,                               -- REFERENCES ENUM_VULKAN_PIPELINE_CREATION_FLAGS(id)
    creationEventId             INTEGER   NOT NULL                     -- REFERENCES VULKAN_PIPELINE_CREATION_EVENTS(id) -- ID of the attached pipeline creation event.
);
CREATE TABLE FECS_EVENTS (
    tag                         INTEGER   NOT NULL,                    -- REFERENCES ENUM_GPU_CTX_SWITCH(id)
    vmId                        INTEGER   NOT NULL,                    -- VM ID.
    seqNo                       INTEGER   NOT NULL,                    -- Sequential event number.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    timestamp                   INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    gpuId                       INTEGER                                -- GPU index.
);
CREATE TABLE ETW_EVENTS_DEPRECATED_TABLE (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    providerName                INTEGER,                               -- REFERENCES StringIds(id) -- Tracing events provider name
    taskName                    INTEGER,                               -- REFERENCES StringIds(id) -- Event task name
    description                 INTEGER                                -- REFERENCES StringIds(id) -- Decoded event value
);
CREATE TABLE OPENMP_EVENT_KIND_THREAD (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    threadId                    INTEGER,                               -- Internal thread sequence starting from 1.
    threadType                  INTEGER                                -- REFERENCES ENUM_OPENMP_THREAD(id)
);
CREATE TABLE OPENMP_EVENT_KIND_PARALLEL (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    parallelId                  INTEGER,                               -- Internal parallel region sequence starting from 1.
    parentTaskId                INTEGER                                -- ID for task that creates this parallel region.
);
CREATE TABLE OPENMP_EVENT_KIND_SYNC_REGION_WAIT (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    parallelId                  INTEGER,                               -- ID of the parallel region that this event belongs to.
    taskId                      INTEGER,                               -- ID of the task that this event belongs to.
    kind                        INTEGER                                -- REFERENCES ENUM_OPENMP_SYNC_REGION(id)
);
CREATE TABLE OPENMP_EVENT_KIND_SYNC_REGION (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    parallelId                  INTEGER,                               -- ID of the parallel region that this event belongs to.
    taskId                      INTEGER,                               -- ID of the task that this event belongs to.
    kind                        INTEGER                                -- REFERENCES ENUM_OPENMP_SYNC_REGION(id)
);
CREATE TABLE OPENMP_EVENT_KIND_TASK (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    parallelId                  INTEGER,                               -- ID of the parallel region that this event belongs to.
    taskId                      INTEGER,                               -- ID of the task that this event belongs to.
    kind                        INTEGER                                -- REFERENCES ENUM_OPENMP_TASK_FLAG(id)
);
CREATE TABLE OPENMP_EVENT_KIND_MASTER (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    parallelId                  INTEGER,                               -- ID of the parallel region that this event belongs to.
    taskId                      INTEGER                                -- ID of the task that this event belongs to.
);
CREATE TABLE OPENMP_EVENT_KIND_REDUCTION (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    parallelId                  INTEGER,                               -- ID of the parallel region that this event belongs to.
    taskId                      INTEGER                                -- ID of the task that this event belongs to.
);
CREATE TABLE OPENMP_EVENT_KIND_TASK_CREATE (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    parentTaskId                INTEGER,                               -- ID of the parent task that is creating a new task.
    newTaskId                   INTEGER                                -- ID of the new task that is being created.
);
CREATE TABLE OPENMP_EVENT_KIND_TASK_SCHEDULE (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    parallelId                  INTEGER,                               -- ID of the parallel region that this event belongs to.
    priorTaskId                 INTEGER,                               -- ID of the task that is being switched out.
    priorTaskStatus             INTEGER,                               -- REFERENCES ENUM_OPENMP_TASK_STATUS(id)
    nextTaskId                  INTEGER                                -- ID of the task that is being switched in.
);
CREATE TABLE OPENMP_EVENT_KIND_CANCEL (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    taskId                      INTEGER                                -- ID of the task that is being cancelled.
);
CREATE TABLE OPENMP_EVENT_KIND_MUTEX_WAIT (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    kind                        INTEGER,                               -- REFERENCES ENUM_OPENMP_MUTEX(id)
    waitId                      INTEGER,                               -- ID indicating the object being waited.
    taskId                      INTEGER                                -- ID of the task that this event belongs to.
);
CREATE TABLE OPENMP_EVENT_KIND_CRITICAL_SECTION (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    kind                        INTEGER,                               -- REFERENCES ENUM_OPENMP_MUTEX(id)
    waitId                      INTEGER                                -- ID indicating the object being held.
);
CREATE TABLE OPENMP_EVENT_KIND_MUTEX_RELEASED (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    kind                        INTEGER,                               -- REFERENCES ENUM_OPENMP_MUTEX(id)
    waitId                      INTEGER,                               -- ID indicating the object being released.
    taskId                      INTEGER                                -- ID of the task that this event belongs to.
);
CREATE TABLE OPENMP_EVENT_KIND_LOCK_INIT (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    kind                        INTEGER,                               -- REFERENCES ENUM_OPENMP_MUTEX(id)
    waitId                      INTEGER                                -- ID indicating object being created/destroyed.
);
CREATE TABLE OPENMP_EVENT_KIND_LOCK_DESTROY (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    kind                        INTEGER,                               -- REFERENCES ENUM_OPENMP_MUTEX(id)
    waitId                      INTEGER                                -- ID indicating object being created/destroyed.
);
CREATE TABLE OPENMP_EVENT_KIND_WORKSHARE (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    kind                        INTEGER,                               -- REFERENCES ENUM_OPENMP_WORK(id)
    parallelId                  INTEGER,                               -- ID of the parallel region that this event belongs to.
    taskId                      INTEGER,                               -- ID of the task that this event belongs to.
    count                       INTEGER                                -- Measure of the quantity of work involved in the region.
);
CREATE TABLE OPENMP_EVENT_KIND_DISPATCH (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    kind                        INTEGER,                               -- REFERENCES ENUM_OPENMP_DISPATCH(id)
    parallelId                  INTEGER,                               -- ID of the parallel region that this event belongs to.
    taskId                      INTEGER                                -- ID of the task that this event belongs to.
);
CREATE TABLE OPENMP_EVENT_KIND_FLUSH (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- Currently unused.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    eventKind                   INTEGER,                               -- REFERENCES ENUM_OPENMP_EVENT_KIND(id)
    threadId                    INTEGER                                -- ID of the thread that this event belongs to.
);
CREATE TABLE D3D11_PIX_DEBUG_API (
    -- D3D11 debug marker events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- First ID matching an API call to GPU workloads.
    endCorrelationId            INTEGER,                               -- Last ID matching an API call to GPU workloads.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    shortContextId              INTEGER,                               -- Short form of the COM interface object address.
    frameId                     INTEGER,                               -- Index of the graphics frame starting from 1.
    color                       INTEGER,                               -- Encoded ARGB color value.
    textId                      INTEGER                                -- REFERENCES StringIds(id) -- PIX marker text
);
CREATE TABLE D3D12_PIX_DEBUG_API (
    -- D3D12 debug marker events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- First ID matching an API call to GPU workloads.
    endCorrelationId            INTEGER,                               -- Last ID matching an API call to GPU workloads.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    shortContextId              INTEGER,                               -- Short form of the COM interface object address.
    frameId                     INTEGER,                               -- Index of the graphics frame starting from 1.
    color                       INTEGER,                               -- Encoded ARGB color value.
    textId                      INTEGER,                               -- REFERENCES StringIds(id) -- PIX marker text
    commandListType             INTEGER,                               -- REFERENCES ENUM_D3D12_CMD_LIST_TYPE(id)
    objectNameId                INTEGER,                               -- REFERENCES StringIds(id) -- D3D12 object name
    longContextId               INTEGER                                -- Long form of the COM interface object address.
);
CREATE TABLE WDDM_EVICT_ALLOCATION_EVENTS (
    -- Raw ETW EvictAllocation events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    allocationHandle            INTEGER   NOT NULL                     -- Global allocation handle.
);
CREATE TABLE WDDM_PAGING_QUEUE_PACKET_START_EVENTS (
    -- Raw ETW PagingQueuePacketStart events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    dxgDevice                   INTEGER,                               -- Address of an IDXGIDevice.
    dxgAdapter                  INTEGER,                               -- Address of an IDXGIAdapter.
    pagingQueue                 INTEGER   NOT NULL,                    -- Address of the paging queue.
    pagingQueuePacket           INTEGER   NOT NULL,                    -- Address of the paging queue packet.
    sequenceId                  INTEGER   NOT NULL,                    -- Internal sequence starting from 0.
    alloc                       INTEGER,                               -- Allocation handle.
    vidMmOpType                 INTEGER   NOT NULL,                    -- REFERENCES ENUM_WDDM_VIDMM_OP_TYPE(id)
    pagingQueueType             INTEGER   NOT NULL                     -- REFERENCES ENUM_WDDM_PAGING_QUEUE_TYPE(id)
);
CREATE TABLE WDDM_PAGING_QUEUE_PACKET_STOP_EVENTS (
    -- Raw ETW PagingQueuePacketStop events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    pagingQueue                 INTEGER   NOT NULL,                    -- Address of the paging queue.
    pagingQueuePacket           INTEGER   NOT NULL,                    -- Address of the paging queue packet.
    sequenceId                  INTEGER   NOT NULL                     -- Internal sequence starting from 0.
);
CREATE TABLE WDDM_PAGING_QUEUE_PACKET_INFO_EVENTS (
    -- Raw ETW PagingQueuePacketInfo events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    pagingQueue                 INTEGER   NOT NULL,                    -- Address of the paging queue.
    pagingQueuePacket           INTEGER   NOT NULL,                    -- Address of the paging queue packet.
    sequenceId                  INTEGER   NOT NULL                     -- Internal sequence starting from 0.
);
CREATE TABLE WDDM_QUEUE_PACKET_START_EVENTS (
    -- Raw ETW QueuePacketStart events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    context                     INTEGER   NOT NULL,                    -- The context ID of WDDM queue.
    dmaBufferSize               INTEGER   NOT NULL,                    -- The dma buffer size.
    dmaBuffer                   INTEGER   NOT NULL,                    -- The reported address of dma buffer.
    queuePacket                 INTEGER   NOT NULL,                    -- The address of queue packet.
    progressFenceValue          INTEGER   NOT NULL,                    -- The fence value.
    packetType                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_WDDM_PACKET_TYPE(id)
    submitSequence              INTEGER   NOT NULL,                    -- Internal sequence starting from 1.
    allocationListSize          INTEGER   NOT NULL,                    -- The number of allocations referenced.
    patchLocationListSize       INTEGER   NOT NULL,                    -- The number of patch locations.
    present                     INTEGER   NOT NULL,                    -- True or False if the packet is a present packet.
    engineType                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_WDDM_ENGINE_TYPE(id)
    syncObject                  INTEGER                                -- The address of fence object.
);
CREATE TABLE WDDM_QUEUE_PACKET_STOP_EVENTS (
    -- Raw ETW QueuePacketStop events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    context                     INTEGER   NOT NULL,                    -- The context ID of WDDM queue.
    queuePacket                 INTEGER   NOT NULL,                    -- The address of queue packet.
    packetType                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_WDDM_PACKET_TYPE(id)
    submitSequence              INTEGER   NOT NULL,                    -- Internal sequence starting from 1.
    preempted                   INTEGER   NOT NULL,                    -- True or False if the packet is preempted.
    timeouted                   INTEGER   NOT NULL,                    -- True or False if the packet is timeouted.
    engineType                  INTEGER   NOT NULL                     -- REFERENCES ENUM_WDDM_ENGINE_TYPE(id)
);
CREATE TABLE WDDM_QUEUE_PACKET_INFO_EVENTS (
    -- Raw ETW QueuePacketInfo events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    context                     INTEGER   NOT NULL,                    -- The context ID of WDDM queue.
    packetType                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_WDDM_PACKET_TYPE(id)
    submitSequence              INTEGER   NOT NULL,                    -- Internal sequence starting from 1.
    engineType                  INTEGER   NOT NULL                     -- REFERENCES ENUM_WDDM_ENGINE_TYPE(id)
);
CREATE TABLE WDDM_DMA_PACKET_START_EVENTS (
    -- Raw ETW DmaPacketStart events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    context                     INTEGER   NOT NULL,                    -- The context ID of WDDM queue.
    queuePacketContext          INTEGER   NOT NULL,                    -- The queue packet context.
    uliSubmissionId             INTEGER   NOT NULL,                    -- The queue packet submission ID.
    dmaBuffer                   INTEGER   NOT NULL,                    -- The reported address of dma buffer.
    packetType                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_WDDM_PACKET_TYPE(id)
    ulQueueSubmitSequence       INTEGER   NOT NULL,                    -- Internal sequence starting from 1.
    quantumStatus               INTEGER   NOT NULL,                    -- The quantum Status.
    engineType                  INTEGER   NOT NULL                     -- REFERENCES ENUM_WDDM_ENGINE_TYPE(id)
);
CREATE TABLE WDDM_DMA_PACKET_STOP_EVENTS (
    -- Raw ETW DmaPacketStop events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    context                     INTEGER   NOT NULL,                    -- The context ID of WDDM queue.
    uliCompletionId             INTEGER   NOT NULL,                    -- The queue packet completion ID.
    packetType                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_WDDM_PACKET_TYPE(id)
    ulQueueSubmitSequence       INTEGER   NOT NULL,                    -- Internal sequence starting from 1.
    preempted                   INTEGER   NOT NULL,                    -- True or False if the packet is preempted.
    engineType                  INTEGER   NOT NULL                     -- REFERENCES ENUM_WDDM_ENGINE_TYPE(id)
);
CREATE TABLE WDDM_DMA_PACKET_INFO_EVENTS (
    -- Raw ETW DmaPacketInfo events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    context                     INTEGER   NOT NULL,                    -- The context ID of WDDM queue.
    uliCompletionId             INTEGER   NOT NULL,                    -- The queue packet completion ID.
    faultedVirtualAddress       INTEGER   NOT NULL,                    -- The virtual address of faulted process.
    faultedProcessHandle        INTEGER   NOT NULL,                    -- The address of faulted process.
    packetType                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_WDDM_PACKET_TYPE(id)
    ulQueueSubmitSequence       INTEGER   NOT NULL,                    -- Internal sequence starting from 1.
    interruptType               INTEGER   NOT NULL,                    -- REFERENCES ENUM_WDDM_INTERRUPT_TYPE(id)
    quantumStatus               INTEGER   NOT NULL,                    -- The quantum Status.
    pageFaultFlags              INTEGER   NOT NULL,                    -- The page fault flag ID.
    engineType                  INTEGER   NOT NULL                     -- REFERENCES ENUM_WDDM_ENGINE_TYPE(id)
);
CREATE TABLE WDDM_HW_QUEUE_EVENTS (
    -- Raw ETW HwQueueStart events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    context                     INTEGER   NOT NULL,                    -- The context ID of WDDM queue.
    hwQueue                     INTEGER   NOT NULL,                    -- The address of HW queue.
    parentDxgHwQueue            INTEGER   NOT NULL                     -- The address of parent Dxg HW queue.
);
CREATE TABLE NVVIDEO_ENCODER_API (
    -- NV Video Encoder API traced to gather information about NVIDIA Video Codek SDK Encoder APIs.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    nameId                      INTEGER   NOT NULL                     -- REFERENCES StringIds(id) -- Function name
);
CREATE TABLE NVVIDEO_DECODER_API (
    -- NV Video Encoder API traced to gather information about NVIDIA Video Codek SDK Decoder APIs.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    nameId                      INTEGER   NOT NULL                     -- REFERENCES StringIds(id) -- Function name
);
CREATE TABLE GPU_MEMORY_BUDGET_EVENTS (
    -- Raw ETW VidMmProcessBudgetChange events.

    timestamp                   INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    newBudget                   INTEGER,                               -- The new budget size in bytes.
    segmentGroup                INTEGER                                -- The segment group ID.
);
CREATE TABLE GPU_MEMORY_USAGE_EVENTS (
    -- Raw ETW VidMmProcessUsageChange events.

    timestamp                   INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    newUsage                    INTEGER,                               -- The new usage size in bytes.
    segmentGroup                INTEGER                                -- The segment group ID.
);
CREATE TABLE DEMOTED_BYTES_EVENTS (
    -- Raw ETW VidMmProcessDemotedCommitmentChange events.

    timestamp                   INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    commitment                  INTEGER                                -- Total demoted bytes.
);
CREATE TABLE TOTAL_BYTES_RESIDENT_IN_SEGMENT_EVENTS (
    -- Raw ETW TotalBytesResidentInSegment events.

    timestamp                   INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    totalBytesResident          INTEGER,                               -- Total bytes resident in segment.
    segmentGroup                INTEGER,                               -- The segment group ID.
    segmentId                   INTEGER                                -- The segment ID.
);
CREATE TABLE NV_LOAD_BALANCE_MASTER_EVENTS (
    -- Raw ETW NV-wgf2um LoadBalanceMaster events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER   NOT NULL,                    -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    eventId                     INTEGER   NOT NULL,                    -- Event ID.
    task                        TEXT      NOT NULL,                    -- The task name.
    frameCount                  INTEGER   NOT NULL,                    -- The frame ID.
    frameTime                   REAL      NOT NULL,                    -- Frame duration.
    averageFrameTime            REAL      NOT NULL,                    -- Average of frame duration.
    averageLatency              REAL      NOT NULL,                    -- Average of latency.
    minLatency                  REAL      NOT NULL,                    -- The minimum latency.
    averageQueuedFrames         REAL      NOT NULL,                    -- Average number of queued frames.
    totalActiveMs               REAL      NOT NULL,                    -- Total active time in milliseconds.
    totalIdleMs                 REAL      NOT NULL,                    -- Total idle time in milliseconds.
    idlePercent                 REAL      NOT NULL,                    -- The percentage of idle time.
    isGPUAlmostOneFrameAhead    INTEGER   NOT NULL                     -- True or False if GPU is almost one frame ahead.
);
CREATE TABLE NV_LOAD_BALANCE_EVENTS (
    -- Raw ETW NV-wgf2um LoadBalance events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER   NOT NULL,                    -- Serialized GlobalId.
    gpu                         INTEGER   NOT NULL,                    -- GPU index.
    eventId                     INTEGER   NOT NULL,                    -- Event ID.
    task                        TEXT      NOT NULL,                    -- The task name.
    averageFPS                  REAL      NOT NULL,                    -- Average frame per second.
    queuedFrames                REAL      NOT NULL,                    -- The amount of queued frames.
    averageQueuedFrames         REAL      NOT NULL,                    -- Average number of queued frames.
    currentCPUTime              REAL      NOT NULL,                    -- The current CPU time.
    averageCPUTime              REAL      NOT NULL,                    -- Average CPU time.
    averageStallTime            REAL      NOT NULL,                    -- Average of stall time.
    averageCPUIdleTime          REAL      NOT NULL,                    -- Average CPU idle time.
    isGPUAlmostOneFrameAhead    INTEGER   NOT NULL                     -- True or False if GPU is almost one frame ahead.
);
CREATE TABLE PROCESSES (
    -- Names and identifiers of processes captured in the report.

    globalPid                   INTEGER,                               -- Serialized GlobalId.
    pid                         INTEGER,                               -- The process ID.
    name                        TEXT                                   -- The process name.
);
CREATE TABLE CUPTI_ACTIVITY_KIND_OPENACC_DATA (
    -- OpenACC data events collected using CUPTI.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    eventKind                   INTEGER   NOT NULL,                    -- REFERENCES ENUM_OPENACC_EVENT_KIND(id)
    DeviceType                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_OPENACC_DEVICE(id)
    lineNo                      INTEGER   NOT NULL,                    -- Line number of the directive or program construct.
    cuDeviceId                  INTEGER   NOT NULL,                    -- CUDA device ID. Valid only if deviceType is acc_device_nvidia.
    cuContextId                 INTEGER   NOT NULL,                    -- CUDA context ID. Valid only if deviceType is acc_device_nvidia.
    cuStreamId                  INTEGER   NOT NULL,                    -- CUDA stream ID. Valid only if deviceType is acc_device_nvidia.
    srcFile                     INTEGER,                               -- REFERENCES StringIds(id) -- Source file name or path
    funcName                    INTEGER,                               -- REFERENCES StringIds(id) -- Function in which event occurred
    bytes                       INTEGER,                               -- Number of bytes.
    varName                     INTEGER                                -- REFERENCES StringIds(id) -- Variable name
);
CREATE TABLE CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH (
    -- OpenACC launch events collected using CUPTI.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    eventKind                   INTEGER   NOT NULL,                    -- REFERENCES ENUM_OPENACC_EVENT_KIND(id)
    DeviceType                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_OPENACC_DEVICE(id)
    lineNo                      INTEGER   NOT NULL,                    -- Line number of the directive or program construct.
    cuDeviceId                  INTEGER   NOT NULL,                    -- CUDA device ID. Valid only if deviceType is acc_device_nvidia.
    cuContextId                 INTEGER   NOT NULL,                    -- CUDA context ID. Valid only if deviceType is acc_device_nvidia.
    cuStreamId                  INTEGER   NOT NULL,                    -- CUDA stream ID. Valid only if deviceType is acc_device_nvidia.
    srcFile                     INTEGER,                               -- REFERENCES StringIds(id) -- Source file name or path
    funcName                    INTEGER,                               -- REFERENCES StringIds(id) -- Function in which event occurred
    numGangs                    INTEGER,                               -- Number of gangs created for this kernel launch.
    numWorkers                  INTEGER,                               -- Number of workers created for this kernel launch.
    vectorLength                INTEGER,                               -- Number of vector lanes created for this kernel launch.
    kernelName                  INTEGER                                -- REFERENCES StringIds(id) -- Kernel name
);
CREATE TABLE CUPTI_ACTIVITY_KIND_OPENACC_OTHER (
    -- OpenACC other events collected using CUPTI.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Event name
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    eventKind                   INTEGER   NOT NULL,                    -- REFERENCES ENUM_OPENACC_EVENT_KIND(id)
    DeviceType                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_OPENACC_DEVICE(id)
    lineNo                      INTEGER   NOT NULL,                    -- Line number of the directive or program construct.
    cuDeviceId                  INTEGER   NOT NULL,                    -- CUDA device ID. Valid only if deviceType is acc_device_nvidia.
    cuContextId                 INTEGER   NOT NULL,                    -- CUDA context ID. Valid only if deviceType is acc_device_nvidia.
    cuStreamId                  INTEGER   NOT NULL,                    -- CUDA stream ID. Valid only if deviceType is acc_device_nvidia.
    srcFile                     INTEGER,                               -- REFERENCES StringIds(id) -- Source file name or path
    funcName                    INTEGER                                -- REFERENCES StringIds(id) -- Function in which event occurred
);
INSERT INTO "EXPORT_META_DATA" VALUES('EXPORT_PRODUCT_NAME','NVIDIA Nsight Systems');
INSERT INTO "EXPORT_META_DATA" VALUES('EXPORT_PRODUCT_VERSION','2022.4.2.1');
INSERT INTO "EXPORT_META_DATA" VALUES('EXPORT_PRODUCT_DATE','2022.4');
INSERT INTO "EXPORT_META_DATA" VALUES('EXPORT_SCHEMA_VERSION','3.0.0');
INSERT INTO "EXPORT_META_DATA" VALUES('EXPORT_SCHEMA_VERSION_MAJOR','3');
INSERT INTO "EXPORT_META_DATA" VALUES('EXPORT_SCHEMA_VERSION_MINOR','0');
INSERT INTO "EXPORT_META_DATA" VALUES('EXPORT_SCHEMA_VERSION_MICRO','0');
INSERT INTO "EXPORT_META_DATA" VALUES('EXPORT_SCHEMA_VERSION_CKSUM','4042420554 115894');
INSERT INTO "EXPORT_META_DATA" VALUES('EXPORT_PLATFORM','linux-desktop');
INSERT INTO "EXPORT_META_DATA" VALUES('EXPORT_ARCH','x64');
INSERT INTO "EXPORT_META_DATA" VALUES('EXPORT_OVERWRITE','false');
INSERT INTO "EXPORT_META_DATA" VALUES('EXPORT_LAZY','false');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(0,'Unknown','Unknown');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(1,'CpuCycles','CpuCycles');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(2,'Instructions','Instructions');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(3,'CacheReferences','CacheReferences');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(4,'L1CacheDataWriteMisses','L1CacheDataWriteMisses');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(5,'L1CacheDataReadMisses','L1CacheDataReadMisses');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(6,'L1CacheInstructionMisses','L1CacheInstructionMisses');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(7,'L2CacheDataWriteMisses','L2CacheDataWriteMisses');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(8,'L2CacheDataReadMisses','L2CacheDataReadMisses');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(9,'L2CacheInstructionMisses','L2CacheInstructionMisses');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(10,'BranchInstructions','BranchInstructions');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(11,'BranchMisses','BranchMisses');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(12,'BusCycles','BusCycles');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(13,'CpuClock','CpuClock');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(14,'TaskClock','TaskClock');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(15,'PageFault','PageFault');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(16,'ContextSwitches','ContextSwitches');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(17,'CpuMigrations','CpuMigrations');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(18,'PageFaultsMin','PageFaultsMin');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(19,'PageFaultsMax','PageFaultsMax');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(20,'AlignmentFaults','AlignmentFaults');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(21,'EmulationFaults','EmulationFaults');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(22,'ThreadState','ThreadState');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(23,'Frames','Frames');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(24,'Annotations','Annotations');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(25,'SchedSwitch','SchedSwitch');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(26,'SchedWakeup','SchedWakeup');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(27,'Command','Command');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(28,'Mmap','Mmap');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(29,'MemUsage','MemUsage');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(30,'Emc','Emc');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(31,'Composite','Composite');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(32,'NvtxEvents','NvtxEvents');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(33,'NvtxCategory','NvtxCategory');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(34,'NvtxMark','NvtxMark');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(35,'NvtxPushRange','NvtxPushRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(36,'NvtxPopRange','NvtxPopRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(37,'NvtxStartRange','NvtxStartRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(38,'NvtxEndRange','NvtxEndRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(39,'NvtxThread','NvtxThread');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(40,'PowerRate','PowerRate');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(41,'Sched','Sched');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(42,'CpuCyclesSelf','CpuCyclesSelf');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(43,'CpuCyclesTotal','CpuCyclesTotal');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(44,'CpuCyclesSelfPlus','CpuCyclesSelfPlus');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(45,'Cuda','Cuda');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(46,'CudaDevice','CudaDevice');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(47,'TraceProcess','TraceProcess');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(48,'TraceFunctions','TraceFunctions');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(49,'Diagnostic','Diagnostic');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(50,'GlWorkload','GlWorkload');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(51,'BandwidthUsage','BandwidthUsage');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(52,'KhrDebugMark','KhrDebugMark');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(53,'KhrDebugPushRange','KhrDebugPushRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(54,'KhrDebugPopRange','KhrDebugPopRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(55,'KhrDebugGpuMark','KhrDebugGpuMark');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(56,'KhrDebugGpuPushRange','KhrDebugGpuPushRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(57,'KhrDebugGpuPopRange','KhrDebugGpuPopRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(58,'GpuCtxsw','GpuCtxsw');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(59,'NvtxPushPopRange','NvtxPushPopRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(60,'NvtxStartEndRange','NvtxStartEndRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(61,'ProfTime','ProfTime');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(62,'KhrDebugPushPopRange','KhrDebugPushPopRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(63,'KhrDebugGpuPushPopRange','KhrDebugGpuPushPopRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(64,'NvtxtCategory','NvtxtCategory');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(65,'NvtxtMark','NvtxtMark');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(66,'NvtxtPushRange','NvtxtPushRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(67,'NvtxtPopRange','NvtxtPopRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(68,'NvtxtStartRange','NvtxtStartRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(69,'NvtxtEndRange','NvtxtEndRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(70,'NvtxtPushPopRange','NvtxtPushPopRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(71,'NvtxtStartEndRange','NvtxtStartEndRange');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(72,'NvtxtMetaThread','NvtxtMetaThread');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(73,'NvtxtMetaProcess','NvtxtMetaProcess');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(74,'NvtxtMetaFileDisplay','NvtxtMetaFileDisplay');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(75,'NvtxDomainCreate','NvtxDomainCreate');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(76,'NvtxDomainDestroy','NvtxDomainDestroy');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(77,'NvnGpuCmdBuf','NvnGpuCmdBuf');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(78,'TraceVSync','TraceVSync');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(79,'CudaDeviceKernel','CudaDeviceKernel');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(80,'CudaDeviceMemory','CudaDeviceMemory');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(81,'Pmu','Pmu');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(82,'NvnGpuDraw','NvnGpuDraw');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(83,'NvnGpuCompute','NvnGpuCompute');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(84,'NvnGpuDebug','NvnGpuDebug');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(85,'OS runtime libraries','OS runtime libraries');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(86,'CuDNN','CuDNN');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(87,'CuBLAS','CuBLAS');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(88,'NvMedia','NvMedia');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(89,'OpenACC','OpenACC');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(90,'Correlation','Correlation');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(91,'DX12','DX12');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(92,'DX12Workload','DX12Workload');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(93,'PmuRawEvent','PmuRawEvent');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(94,'GraphicsFrame','GraphicsFrame');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(95,'Vulkan','Vulkan');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(96,'VulkanWorkload','VulkanWorkload');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(97,'NvtxNameCudaDevice','NvtxNameCudaDevice');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(98,'NvtxNameCudaContext','NvtxNameCudaContext');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(99,'NvtxNameCudaStream','NvtxNameCudaStream');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(100,'SystemEvent','SystemEvent');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(101,'GpuMemoryEvent','GpuMemoryEvent');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(102,'DX12CreateObject','DX12CreateObject');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(103,'VulkanCreateObject','VulkanCreateObject');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(104,'UnitTraceEvent','UnitTraceEvent');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(105,'CustomETWEvent','CustomETWEvent');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(106,'CudaSyncEvent','CudaSyncEvent');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(107,'SLIEvent','SLIEvent');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(108,'CudaBacktrace','CudaBacktrace');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(109,'WddmEvent','WddmEvent');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(110,'DX11','DX11');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(111,'DX11CreateObject','DX11CreateObject');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(112,'DXGI','DXGI');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(113,'CudaGraphNodeCreation','CudaGraphNodeCreation');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(114,'OpenMP','OpenMP');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(115,'UncorePmuEvent','UncorePmuEvent');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(116,'UncorePmuCarmel','UncorePmuCarmel');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(117,'CudaDeviceMemoryUsage','CudaDeviceMemoryUsage');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(118,'ETWDxgKrnlEvent','ETWDxgKrnlEvent');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(119,'CudaUvmCpuPageFaultEvent','CudaUvmCpuPageFaultEvent');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(120,'CudaUvmGpuPageFaultEvent','CudaUvmGpuPageFaultEvent');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(121,'NICMetricsValuesEvent','NICMetricsValuesEvent');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(122,'NICMetricsListEvent','NICMetricsListEvent');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(123,'InterruptHandler','InterruptHandler');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(124,'NVENC','NVENC');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(125,'NVDEC','NVDEC');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(126,'nvJPEG','nvJPEG');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(127,'CudaEventRecord','CudaEventRecord');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(128,'PerfEventCountEvent','PerfEventCountEvent');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(129,'CudaDeviceMemoryPool','CudaDeviceMemoryPool');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(130,'CudaDeviceGraph','CudaDeviceGraph');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(131,'CudaGraphExecCreation','CudaGraphExecCreation');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(132,'CudaGraphCreation','CudaGraphCreation');
INSERT INTO "ENUM_NSYS_EVENT_TYPE" VALUES(133,'CudaGraphClone','CudaGraphClone');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(0,'TRACE_PROCESS_EVENT_CUDA_RUNTIME','CUDA runtime');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(1,'TRACE_PROCESS_EVENT_CUDA_DRIVER','CUDA driver');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(2,'TRACE_PROCESS_EVENT_GL','GL');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(3,'TRACE_PROCESS_EVENT_TSP_OVERHEAD','TSP overhead');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(4,'TRACE_PROCESS_EVENT_GL_DEBUG','GL debug');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(5,'TRACE_PROCESS_EVENT_GL_WORKLOAD','GL workload');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(6,'TRACE_PROCESS_EVENT_NVTX_START','NVTX start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(7,'TRACE_PROCESS_EVENT_NVTX_FINISH','NVTX finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(8,'TRACE_PROCESS_EVENT_GL_START','GL start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(9,'TRACE_PROCESS_EVENT_GL_FINISH','GL finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(10,'TRACE_PROCESS_EVENT_CUDA_START','CUDA start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(11,'TRACE_PROCESS_EVENT_CUDA_FINISH','CUDA finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(12,'TRACE_PROCESS_EVENT_CUDA_INIT_ERROR','CUDA init error');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(13,'TRACE_PROCESS_EVENT_CUDA_EGL_DRIVER','CUDA EGL driver');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(18,'TRACE_PROCESS_EVENT_VSYNC','Vsync');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(26,'TRACE_PROCESS_EVENT_CUDA_API','CUDA API');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(27,'TRACE_PROCESS_EVENT_OS_RUNTIME','OSRT runtime');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(28,'TRACE_PROCESS_EVENT_CUDNN','cuDNN');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(29,'TRACE_PROCESS_EVENT_CUBLAS','cuBLAS');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(31,'TRACE_PROCESS_EVENT_OS_RUNTIME_START','OSRT start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(32,'TRACE_PROCESS_EVENT_OS_RUNTIME_FINISH','OSRT finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(33,'TRACE_PROCESS_EVENT_CUDNN_START','cuDNN start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(34,'TRACE_PROCESS_EVENT_CUDNN_FINISH','cuDNN finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(35,'TRACE_PROCESS_EVENT_CUBLAS_START','cuBLAS start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(36,'TRACE_PROCESS_EVENT_CUBLAS_FINISH','cuBLAS finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(37,'TRACE_PROCESS_EVENT_THREAD_BLOCK','Thread block');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(38,'TRACE_PROCESS_EVENT_NVMEDIA','NVmedia');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(39,'TRACE_PROCESS_EVENT_NVMEDIA_START','NVmedia start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(40,'TRACE_PROCESS_EVENT_NVMEDIA_FINISH','NVmedia finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(41,'TRACE_PROCESS_EVENT_DX12_API','DX12 API');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(42,'TRACE_PROCESS_EVENT_DX12_WORKLOAD','DX12 workload');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(43,'TRACE_PROCESS_EVENT_DX12_START','DX12 start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(44,'TRACE_PROCESS_EVENT_DX12_FINISH','DX12 finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(45,'TRACE_PROCESS_EVENT_OPENACC_START','OpenACC start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(46,'TRACE_PROCESS_EVENT_OPENACC_FINISH','OpenACC finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(47,'TRACE_PROCESS_EVENT_OPENACC_INIT_ERROR','OpenACC init error');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(48,'TRACE_PROCESS_EVENT_OPENACC','OpenACC');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(49,'TRACE_PROCESS_EVENT_CPU_FPS','CPU FPS');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(50,'TRACE_PROCESS_EVENT_GPU_FPS','GPU FPS');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(51,'TRACE_PROCESS_EVENT_GL_MULTI_ERROR','GL multi-error');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(52,'TRACE_PROCESS_EVENT_DX12_DISPLAY','DX12 display');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(53,'TRACE_PROCESS_EVENT_VULKAN_API','Vulkan API');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(54,'TRACE_PROCESS_EVENT_VULKAN_WORKLOAD','Vulkan workload');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(55,'TRACE_PROCESS_EVENT_VULKAN_START','Vulkan start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(56,'TRACE_PROCESS_EVENT_VULKAN_FINISH','Vulkan finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(57,'TRACE_PROCESS_EVENT_SYSTEM_EVENT','System event');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(58,'TRACE_PROCESS_EVENT_GPU_MEMORY','GPU memory');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(59,'TRACE_PROCESS_EVENT_DX12_CREATE_OBJECT','DX12 create object');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(60,'TRACE_PROCESS_EVENT_VULKAN_CREATE_OBJECT','Vulkan create object');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(61,'TRACE_PROCESS_EVENT_CUSTOM_ETW_TRACE','Custom ETW trace');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(62,'TRACE_PROCESS_EVENT_SLI','SLI');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(63,'TRACE_PROCESS_EVENT_SLI_START','SLI start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(64,'TRACE_PROCESS_EVENT_SLI_FINISH','SLI finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(65,'TRACE_PROCESS_EVENT_DX12_DEBUG_API','DX12 debug API');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(66,'TRACE_PROCESS_EVENT_VULKAN_DEBUG_API','Vulkan debug API');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(67,'TRACE_PROCESS_EVENT_CUDABACKTRACE','CUDA backtrace');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(68,'TRACE_PROCESS_EVENT_CUDABACKTRACE_START','CUDA backtrace start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(69,'TRACE_PROCESS_EVENT_CUDABACKTRACE_FINISH','CUDA backtrace finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(70,'TRACE_PROCESS_EVENT_WDDM','WDDM');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(71,'TRACE_PROCESS_EVENT_DX11_API','DX11 API');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(72,'TRACE_PROCESS_EVENT_DX11_START','DX11 start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(73,'TRACE_PROCESS_EVENT_DX11_FINISH','DX11 finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(74,'TRACE_PROCESS_EVENT_DX11_CREATE_OBJECT','DX11 create object');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(75,'TRACE_PROCESS_EVENT_DX11_DEBUG_API','DX11 debug API');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(76,'TRACE_PROCESS_EVENT_DXCOMMON_API','DX common API');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(77,'TRACE_PROCESS_EVENT_CUDA_GRAPH_NODE_CREATION','CUDA graph node creation');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(78,'TRACE_PROCESS_EVENT_OPENMP','OpenMP');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(79,'TRACE_PROCESS_EVENT_OPENMP_START','OpenMP start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(80,'TRACE_PROCESS_EVENT_OPENMP_FINISH','OpenMP finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(81,'TRACE_PROCESS_EVENT_NVAPI','NV API');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(82,'TRACE_PROCESS_EVENT_ETWDXGKRNL','ETW DXG KRNL');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(83,'TRACE_PROCESS_EVENT_NVENC','NVENC');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(84,'TRACE_PROCESS_EVENT_NVENC_START','NVENC start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(85,'TRACE_PROCESS_EVENT_NVENC_FINISH','NVENC finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(86,'TRACE_PROCESS_EVENT_NVDEC','NVDEC');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(87,'TRACE_PROCESS_EVENT_NVDEC_START','NVDEC start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(88,'TRACE_PROCESS_EVENT_NVDEC_FINISH','NVDEC finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(89,'TRACE_PROCESS_EVENT_NVJPEG','nvJPEG');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(90,'TRACE_PROCESS_EVENT_NVJPEG_START','nvJPEG start');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(91,'TRACE_PROCESS_EVENT_NVJPEG_FINISH','nvJPEG finish');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(92,'TRACE_PROCESS_EVENT_DX12_BATCH_WORKLOAD','DX12 batch workload');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(93,'TRACE_PROCESS_EVENT_VULKAN_BATCH_WORKLOAD','Vulkan batch workload');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(94,'TRACE_PROCESS_EVENT_CUDA_GRAPHEXEC_CREATION','CUDA graph exec creation');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(95,'TRACE_PROCESS_EVENT_CUDA_GRAPH_CREATION','CUDA graph creation');
INSERT INTO "ENUM_NSYS_EVENT_CLASS" VALUES(96,'TRACE_PROCESS_EVENT_CUDA_GRAPH_CLONE','CUDA graph clone');
INSERT INTO "ENUM_STACK_UNWIND_METHOD" VALUES(0,'Unknown','Unknown');
INSERT INTO "ENUM_STACK_UNWIND_METHOD" VALUES(1,'FramePointer','Frame pointer');
INSERT INTO "ENUM_STACK_UNWIND_METHOD" VALUES(2,'UnwindTable','Unwind table');
INSERT INTO "ENUM_STACK_UNWIND_METHOD" VALUES(3,'LR_FramePointer','LR frame pointer');
INSERT INTO "ENUM_STACK_UNWIND_METHOD" VALUES(4,'LR_UnwindTable','LR unwind table');
INSERT INTO "ENUM_STACK_UNWIND_METHOD" VALUES(5,'KernelContext','Kernel context');
INSERT INTO "ENUM_STACK_UNWIND_METHOD" VALUES(6,'DWARF_EH','DWARF EH');
INSERT INTO "ENUM_STACK_UNWIND_METHOD" VALUES(7,'DWARF_DF','DWARF DF');
INSERT INTO "ENUM_STACK_UNWIND_METHOD" VALUES(8,'LBR','LBR');
INSERT INTO "ENUM_STACK_UNWIND_METHOD" VALUES(1000,'Undefined','Undefined');
INSERT INTO "ENUM_SAMPLING_THREAD_STATE" VALUES(0,'Unknown','Unknown');
INSERT INTO "ENUM_SAMPLING_THREAD_STATE" VALUES(1,'Running','Running');
INSERT INTO "ENUM_SAMPLING_THREAD_STATE" VALUES(2,'Interruptible','Interruptible');
INSERT INTO "ENUM_SAMPLING_THREAD_STATE" VALUES(3,'Uninterruptible','Uninterruptible');
INSERT INTO "ENUM_SAMPLING_THREAD_STATE" VALUES(4,'Stopped','Stopped');
INSERT INTO "ENUM_SAMPLING_THREAD_STATE" VALUES(5,'Terminated','Terminated');
INSERT INTO "ENUM_SAMPLING_THREAD_STATE" VALUES(6,'Unscheduled','Unscheduled');
INSERT INTO "ENUM_SAMPLING_THREAD_STATE" VALUES(7,'Waiting','Waiting');
INSERT INTO "ENUM_SAMPLING_THREAD_STATE" VALUES(8,'OSRuntime','OS runtime');
INSERT INTO "ENUM_SAMPLING_THREAD_STATE" VALUES(9,'Initialized','Initialized');
INSERT INTO "ENUM_SAMPLING_THREAD_STATE" VALUES(10,'Transition','Transition');
INSERT INTO "UnwindMethodType" VALUES(0,'Unknown');
INSERT INTO "UnwindMethodType" VALUES(1,'FramePointer');
INSERT INTO "UnwindMethodType" VALUES(2,'UnwindTable');
INSERT INTO "UnwindMethodType" VALUES(3,'LR_FramePointer');
INSERT INTO "UnwindMethodType" VALUES(4,'LR_UnwindTable');
INSERT INTO "UnwindMethodType" VALUES(5,'KernelContext');
INSERT INTO "UnwindMethodType" VALUES(6,'DWARF_EH');
INSERT INTO "UnwindMethodType" VALUES(7,'DWARF_DF');
INSERT INTO "UnwindMethodType" VALUES(8,'LBR');
COMMIT;
