package catalogue

// ECS series. Names and labels follow prometheus-community/ecs_exporter
// v0.4 where a series exists there, so its dashboards keep working; the
// rest are additions documented in docs/ecs.md. Task-level series carry
// no labels: the scrape target identifies the task, and
// ecs_task_metadata_info carries the task's identity for joins.

// Namespaces of the ECS and CloudWatch collectors.
const (
	ECSNamespace        = "ecs"
	CloudWatchSubsystem = "cloudwatch"
)

// Label sets shared by the ECS series.
var (
	ecsContainerLabels = []string{"container_name"}
	// Network series carry container_name only in bridge mode, where each
	// container has its own namespace; in awsvpc and host mode it is empty
	// (absent once ingested) because every container reports the same
	// interface counters.
	ecsNetworkLabels     = []string{"container_name", "interface"}
	ecsTaskMetadataLabel = []string{"cluster", "cluster_name", "task_arn", "task_id", "family", "revision",
		"launch_type", "availability_zone", "service_name", "desired_status", "known_status"}
	ecsContainerInfoLabels = []string{"container_name", "container_id", "image", "desired_status", "known_status"}
	ecsServiceLabels       = []string{"cluster_name", "service_name"}
)

// Task metadata endpoint v4 series (source "ecs").
var (
	ECSUp = Desc{Name: "ecs_up", Type: GaugeType, Unit: "",
		Help: "Whether the last read of the ECS task metadata endpoint succeeded (1) or not (0).", Source: "ecs"}
	ECSScrapeDuration = Desc{Name: "ecs_scrape_duration_seconds", Type: GaugeType, Unit: "seconds",
		Help: "Time the last read of the ECS task metadata endpoint took.", Source: "ecs"}

	ECSTaskMetadataInfo = Desc{Name: "ecs_task_metadata_info", Type: InfoType,
		Help: "ECS task metadata, sourced from the task metadata endpoint version 4.", Labels: ecsTaskMetadataLabel, Source: "ecs"}
	ECSTaskCPULimit = Desc{Name: "ecs_task_cpu_limit_vcpus", Type: GaugeType, Unit: "vcpus",
		Help: "Configured task CPU limit in vCPUs (1 vCPU = 1024 CPU units). This is optional when running on EC2; if no limit is set, this metric has no value.", Source: "ecs"}
	ECSTaskMemoryLimit = Desc{Name: "ecs_task_memory_limit_bytes", Type: GaugeType, Unit: "bytes",
		Help: "Configured task memory limit in bytes. This is optional when running on EC2; if no limit is set, this metric has no value.", Source: "ecs"}
	ECSTaskEphemeralUsed = Desc{Name: "ecs_task_ephemeral_storage_used_bytes", Type: GaugeType, Unit: "bytes",
		Help: "Current Fargate task ephemeral storage usage in bytes.", Source: "ecs"}
	ECSTaskEphemeralAllocated = Desc{Name: "ecs_task_ephemeral_storage_allocated_bytes", Type: GaugeType, Unit: "bytes",
		Help: "Configured Fargate task ephemeral storage allocated size in bytes.", Source: "ecs"}
	ECSTaskPullStart = Desc{Name: "ecs_task_image_pull_start_timestamp_seconds", Type: GaugeType, Unit: "seconds",
		Help: "The time at which the task started pulling docker images for its containers.", Source: "ecs"}
	ECSTaskPullStop = Desc{Name: "ecs_task_image_pull_stop_timestamp_seconds", Type: GaugeType, Unit: "seconds",
		Help: "The time at which the task stopped (i.e. completed) pulling docker images for its containers.", Source: "ecs"}

	ECSContainerInfo = Desc{Name: "ecs_container_info", Type: InfoType,
		Help: "ECS container metadata from the task metadata endpoint, one series per container including stopped ones.", Labels: ecsContainerInfoLabels, Source: "ecs"}
	ECSContainerCPUUsage = Desc{Name: "ecs_container_cpu_usage_seconds_total", Type: CounterType, Unit: "seconds",
		Help: "Cumulative total container CPU usage in seconds.", Labels: ecsContainerLabels, Source: "ecs"}
	ECSContainerCPUUser = Desc{Name: "ecs_container_cpu_user_seconds_total", Type: CounterType, Unit: "seconds",
		Help: "Cumulative container CPU time spent in user mode in seconds.", Labels: ecsContainerLabels, Source: "ecs"}
	ECSContainerCPUSystem = Desc{Name: "ecs_container_cpu_system_seconds_total", Type: CounterType, Unit: "seconds",
		Help: "Cumulative container CPU time spent in kernel mode in seconds.", Labels: ecsContainerLabels, Source: "ecs"}
	ECSContainerCPULimit = Desc{Name: "ecs_container_cpu_limit_vcpus", Type: GaugeType, Unit: "vcpus",
		Help: "Configured container CPU in vCPUs (container CPU units / 1024). A relative cpu.shares weight, not a hard cap; absent when unset.", Labels: ecsContainerLabels, Source: "ecs"}
	ECSContainerMemoryUsage = Desc{Name: "ecs_container_memory_usage_bytes", Type: GaugeType, Unit: "bytes",
		Help: "Current container memory usage in bytes.", Labels: ecsContainerLabels, Source: "ecs"}
	ECSContainerMemoryWorkingSet = Desc{Name: "ecs_container_memory_working_set_bytes", Type: GaugeType, Unit: "bytes",
		Help: "Current container memory working set in bytes: usage minus inactive_file (cgroup v2) or total_inactive_file (cgroup v1), as docker stats and Kubernetes compute it.", Labels: ecsContainerLabels, Source: "ecs"}
	ECSContainerMemoryPageCache = Desc{Name: "ecs_container_memory_page_cache_size_bytes", Type: GaugeType, Unit: "bytes",
		Help: "Current container memory page cache size in bytes (cache on cgroup v1, file on cgroup v2). This is not a subset of used bytes.", Labels: ecsContainerLabels, Source: "ecs"}
	ECSContainerMemoryLimit = Desc{Name: "ecs_container_memory_limit_bytes", Type: GaugeType, Unit: "bytes",
		Help: "Configured container memory limit in bytes, set from the container-level limit in the task definition if any, otherwise the task-level limit.", Labels: ecsContainerLabels, Source: "ecs"}
	ECSContainerRestarts = Desc{Name: "ecs_container_restarts_total", Type: CounterType, Unit: "restarts",
		Help: "Cumulative total count of container restarts. Only present if the container has a restart policy configured.", Labels: ecsContainerLabels, Source: "ecs"}
	ECSContainerExitCode = Desc{Name: "ecs_container_exit_code", Type: GaugeType, Unit: "",
		Help: "Exit code of a stopped container, present once the container has exited.", Labels: ecsContainerLabels, Source: "ecs"}
	ECSContainerPids = Desc{Name: "ecs_container_pids", Type: GaugeType, Unit: "pids",
		Help: "Current number of processes and threads in the container, where the platform reports it (cgroup v2).", Labels: ecsContainerLabels, Source: "ecs"}
	ECSContainerBlkioRead = Desc{Name: "ecs_container_blkio_read_bytes_total", Type: CounterType, Unit: "bytes",
		Help: "Cumulative bytes read from block devices, summed over devices (operation names matched case-insensitively).", Labels: ecsContainerLabels, Source: "ecs"}
	ECSContainerBlkioWrite = Desc{Name: "ecs_container_blkio_write_bytes_total", Type: CounterType, Unit: "bytes",
		Help: "Cumulative bytes written to block devices, summed over devices (operation names matched case-insensitively).", Labels: ecsContainerLabels, Source: "ecs"}

	ECSNetworkReceiveBytes = Desc{Name: "ecs_network_receive_bytes_total", Type: CounterType, Unit: "bytes",
		Help: "Cumulative total size of network packets received in bytes.", Labels: ecsNetworkLabels, Source: "ecs"}
	ECSNetworkReceivePackets = Desc{Name: "ecs_network_receive_packets_total", Type: CounterType, Unit: "packets",
		Help: "Cumulative total count of network packets received.", Labels: ecsNetworkLabels, Source: "ecs"}
	ECSNetworkReceiveDropped = Desc{Name: "ecs_network_receive_packets_dropped_total", Type: CounterType, Unit: "packets",
		Help: "Cumulative total count of network packets dropped in receiving.", Labels: ecsNetworkLabels, Source: "ecs"}
	ECSNetworkReceiveErrors = Desc{Name: "ecs_network_receive_errors_total", Type: CounterType, Unit: "errors",
		Help: "Cumulative total count of network errors in receiving.", Labels: ecsNetworkLabels, Source: "ecs"}
	ECSNetworkTransmitBytes = Desc{Name: "ecs_network_transmit_bytes_total", Type: CounterType, Unit: "bytes",
		Help: "Cumulative total size of network packets transmitted in bytes.", Labels: ecsNetworkLabels, Source: "ecs"}
	ECSNetworkTransmitPackets = Desc{Name: "ecs_network_transmit_packets_total", Type: CounterType, Unit: "packets",
		Help: "Cumulative total count of network packets transmitted.", Labels: ecsNetworkLabels, Source: "ecs"}
	ECSNetworkTransmitDropped = Desc{Name: "ecs_network_transmit_packets_dropped_total", Type: CounterType, Unit: "packets",
		Help: "Cumulative total count of network packets dropped in transmit.", Labels: ecsNetworkLabels, Source: "ecs"}
	ECSNetworkTransmitErrors = Desc{Name: "ecs_network_transmit_errors_total", Type: CounterType, Unit: "errors",
		Help: "Cumulative total count of network errors in transmit.", Labels: ecsNetworkLabels, Source: "ecs"}
)

// CloudWatch series (source "cloudwatch"): service-level values polled in
// the background with GetMetricData and served from the last poll. Units
// are converted to base units: percent to ratio, CPU units to vCPUs, MiB
// to bytes.
var (
	ECSServiceCPUUtilization = Desc{Name: "ecs_service_cpu_utilization_ratio", Type: GaugeType, Unit: "ratio",
		Help: "AWS/ECS CPUUtilization of the service as a ratio of the task definition's CPU (CloudWatch percent / 100), by statistic across tasks.", Labels: []string{"cluster_name", "service_name", "statistic"}, Source: "cloudwatch"}
	ECSServiceMemoryUtilization = Desc{Name: "ecs_service_memory_utilization_ratio", Type: GaugeType, Unit: "ratio",
		Help: "AWS/ECS MemoryUtilization of the service as a ratio of the task definition's memory (CloudWatch percent / 100), by statistic across tasks.", Labels: []string{"cluster_name", "service_name", "statistic"}, Source: "cloudwatch"}
	ECSServiceCPUUtilized = Desc{Name: "ecs_service_cpu_utilized_vcpus", Type: GaugeType, Unit: "vcpus",
		Help: "ECS/ContainerInsights CpuUtilized of the service in vCPUs (CPU units / 1024).", Labels: ecsServiceLabels, Source: "cloudwatch"}
	ECSServiceCPUReserved = Desc{Name: "ecs_service_cpu_reserved_vcpus", Type: GaugeType, Unit: "vcpus",
		Help: "ECS/ContainerInsights CpuReserved of the service in vCPUs (CPU units / 1024).", Labels: ecsServiceLabels, Source: "cloudwatch"}
	ECSServiceMemoryUtilized = Desc{Name: "ecs_service_memory_utilized_bytes", Type: GaugeType, Unit: "bytes",
		Help: "ECS/ContainerInsights MemoryUtilized of the service in bytes (usage minus page cache, as the ECS agent computes it).", Labels: ecsServiceLabels, Source: "cloudwatch"}
	ECSServiceMemoryReserved = Desc{Name: "ecs_service_memory_reserved_bytes", Type: GaugeType, Unit: "bytes",
		Help: "ECS/ContainerInsights MemoryReserved of the service in bytes.", Labels: ecsServiceLabels, Source: "cloudwatch"}
	ECSServiceRunningTasks = Desc{Name: "ecs_service_running_tasks", Type: GaugeType, Unit: "tasks",
		Help: "ECS/ContainerInsights RunningTaskCount of the service.", Labels: ecsServiceLabels, Source: "cloudwatch"}
	ECSServiceDesiredTasks = Desc{Name: "ecs_service_desired_tasks", Type: GaugeType, Unit: "tasks",
		Help: "ECS/ContainerInsights DesiredTaskCount of the service.", Labels: ecsServiceLabels, Source: "cloudwatch"}
	ECSServicePendingTasks = Desc{Name: "ecs_service_pending_tasks", Type: GaugeType, Unit: "tasks",
		Help: "ECS/ContainerInsights PendingTaskCount of the service.", Labels: ecsServiceLabels, Source: "cloudwatch"}
	ECSServiceNetworkRx = Desc{Name: "ecs_service_network_receive_bytes_per_second", Type: GaugeType, Unit: "bytes",
		Help: "ECS/ContainerInsights NetworkRxBytes of the service in bytes per second.", Labels: ecsServiceLabels, Source: "cloudwatch"}
	ECSServiceNetworkTx = Desc{Name: "ecs_service_network_transmit_bytes_per_second", Type: GaugeType, Unit: "bytes",
		Help: "ECS/ContainerInsights NetworkTxBytes of the service in bytes per second.", Labels: ecsServiceLabels, Source: "cloudwatch"}
	ECSServiceDatapointTimestamp = Desc{Name: "ecs_service_cloudwatch_datapoint_timestamp_seconds", Type: GaugeType, Unit: "seconds",
		Help: "CloudWatch timestamp (start of the period) of the datapoint each ecs_service_* value comes from.", Labels: []string{"cluster_name", "service_name", "metric"}, Source: "cloudwatch"}

	CloudWatchUp = Desc{Name: "envelope_exporter_cloudwatch_up", Type: GaugeType,
		Help: "Whether the last CloudWatch poll succeeded (1) or not (0).", Source: "exporter"}
	CloudWatchRequests = Desc{Name: "envelope_exporter_cloudwatch_requests_total", Type: CounterType, Unit: "requests",
		Help: "GetMetricData calls made, by outcome (success or error).", Labels: []string{"outcome"}, Source: "exporter"}
	CloudWatchMetricsRequested = Desc{Name: "envelope_exporter_cloudwatch_metrics_requested_total", Type: CounterType, Unit: "metrics",
		Help: "Metric queries sent to GetMetricData; CloudWatch bills per metric requested.", Source: "exporter"}
	CloudWatchErrors = Desc{Name: "envelope_exporter_cloudwatch_errors_total", Type: CounterType, Unit: "errors",
		Help: "Failed GetMetricData calls by reason (throttled, credentials, other); each is retried with backoff.", Labels: []string{"reason"}, Source: "exporter"}
	CloudWatchLastSuccess = Desc{Name: "envelope_exporter_cloudwatch_last_success_timestamp_seconds", Type: GaugeType, Unit: "seconds",
		Help: "Time of the last successful CloudWatch poll.", Source: "exporter"}
	CloudWatchPollDuration = Desc{Name: "envelope_exporter_cloudwatch_poll_duration_seconds", Type: GaugeType, Unit: "seconds",
		Help: "Duration of the last CloudWatch poll, retries included.", Source: "exporter"}
)

// ECSDescs lists the task metadata series in exposition order.
func ECSDescs() []Desc {
	return []Desc{ECSUp, ECSScrapeDuration, ECSTaskMetadataInfo, ECSTaskCPULimit, ECSTaskMemoryLimit,
		ECSTaskEphemeralUsed, ECSTaskEphemeralAllocated, ECSTaskPullStart, ECSTaskPullStop,
		ECSContainerInfo, ECSContainerCPUUsage, ECSContainerCPUUser, ECSContainerCPUSystem, ECSContainerCPULimit,
		ECSContainerMemoryUsage, ECSContainerMemoryWorkingSet, ECSContainerMemoryPageCache, ECSContainerMemoryLimit,
		ECSContainerRestarts, ECSContainerExitCode, ECSContainerPids, ECSContainerBlkioRead, ECSContainerBlkioWrite,
		ECSNetworkReceiveBytes, ECSNetworkReceivePackets, ECSNetworkReceiveDropped, ECSNetworkReceiveErrors,
		ECSNetworkTransmitBytes, ECSNetworkTransmitPackets, ECSNetworkTransmitDropped, ECSNetworkTransmitErrors}
}

// CloudWatchDescs lists the CloudWatch series and the poller's self-metrics.
func CloudWatchDescs() []Desc {
	return []Desc{ECSServiceCPUUtilization, ECSServiceMemoryUtilization, ECSServiceCPUUtilized, ECSServiceCPUReserved,
		ECSServiceMemoryUtilized, ECSServiceMemoryReserved, ECSServiceRunningTasks, ECSServiceDesiredTasks,
		ECSServicePendingTasks, ECSServiceNetworkRx, ECSServiceNetworkTx, ECSServiceDatapointTimestamp,
		CloudWatchUp, CloudWatchRequests, CloudWatchMetricsRequested, CloudWatchErrors, CloudWatchLastSuccess,
		CloudWatchPollDuration}
}

// ECS recording rules, named level:metric:operations. Task-level series
// carry only the scrape target's labels (instance, job), so the task is
// the instance level.
const (
	// Task CPU used as a ratio of the task's vCPU limit (Fargate: a hard cap).
	RecECSTaskCPUUtilisation = "instance:ecs_task_cpu_utilisation:ratio_rate1m"
	// Task working set as a ratio of the task memory limit.
	RecECSTaskMemoryUtilisation = "instance:ecs_task_memory_working_set_utilisation:ratio"
	// Container working set as a ratio of its own limit (container limit
	// if set, else task limit); covers EC2 tasks without a task limit.
	RecECSContainerMemoryUtilisation = "instance_container_name:ecs_container_memory_working_set_utilisation:ratio"
	// CPU seconds the ECS tasks spent per k6 request: the efficiency figure
	// the envelope bands.
	RecECSCPUSecondsPerRequest = "envelope:ecs_cpu_seconds_per_request:ratio_rate5m"
)

// ecsRecordingRules lists the ECS recording rules, in generation order.
func ecsRecordingRules() []string {
	return []string{RecECSTaskCPUUtilisation, RecECSTaskMemoryUtilisation,
		RecECSContainerMemoryUtilisation, RecECSCPUSecondsPerRequest}
}
