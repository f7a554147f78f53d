// Package cloudwatch polls ECS service metrics from Amazon CloudWatch
// (AWS/ECS utilisation and ECS/ContainerInsights) with GetMetricData in
// the background and serves the last values as Prometheus series, so a
// slow, throttled or unreachable CloudWatch never blocks a scrape.
package cloudwatch

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/envelope-dev/envelope/internal/catalogue"
)

// Namespaces read.
const (
	NamespaceECS               = "AWS/ECS"
	NamespaceContainerInsights = "ECS/ContainerInsights"
)

// metricSpec is one CloudWatch metric and statistic and the series it
// becomes. scale converts CloudWatch's unit to the series' base unit.
type metricSpec struct {
	namespace string
	name      string
	stat      string
	desc      catalogue.Desc
	scale     float64
	// statLabel adds the statistic as a label (utilisation series carry
	// Average and Maximum: the mean task and the most loaded task).
	statLabel bool
}

// specs lists what is read per service. AWS/ECS utilisation is free and
// always read; Container Insights metrics cost extra and need the
// feature enabled on the cluster, so they are read only when asked.
func specs(containerInsights bool) []metricSpec {
	s := []metricSpec{
		{NamespaceECS, "CPUUtilization", "Average", catalogue.ECSServiceCPUUtilization, 0.01, true},
		{NamespaceECS, "CPUUtilization", "Maximum", catalogue.ECSServiceCPUUtilization, 0.01, true},
		{NamespaceECS, "MemoryUtilization", "Average", catalogue.ECSServiceMemoryUtilization, 0.01, true},
		{NamespaceECS, "MemoryUtilization", "Maximum", catalogue.ECSServiceMemoryUtilization, 0.01, true},
	}
	if !containerInsights {
		return s
	}
	// Container Insights publishes one service-level value per minute, so
	// Average over a 60s period is that value.
	return append(s,
		metricSpec{NamespaceContainerInsights, "CpuUtilized", "Average", catalogue.ECSServiceCPUUtilized, 1.0 / 1024, false},
		metricSpec{NamespaceContainerInsights, "CpuReserved", "Average", catalogue.ECSServiceCPUReserved, 1.0 / 1024, false},
		metricSpec{NamespaceContainerInsights, "MemoryUtilized", "Average", catalogue.ECSServiceMemoryUtilized, 1 << 20, false},
		metricSpec{NamespaceContainerInsights, "MemoryReserved", "Average", catalogue.ECSServiceMemoryReserved, 1 << 20, false},
		metricSpec{NamespaceContainerInsights, "RunningTaskCount", "Average", catalogue.ECSServiceRunningTasks, 1, false},
		metricSpec{NamespaceContainerInsights, "DesiredTaskCount", "Average", catalogue.ECSServiceDesiredTasks, 1, false},
		metricSpec{NamespaceContainerInsights, "PendingTaskCount", "Average", catalogue.ECSServicePendingTasks, 1, false},
		metricSpec{NamespaceContainerInsights, "NetworkRxBytes", "Average", catalogue.ECSServiceNetworkRx, 1, false},
		metricSpec{NamespaceContainerInsights, "NetworkTxBytes", "Average", catalogue.ECSServiceNetworkTx, 1, false},
	)
}

// convert applies scale; fractional scales divide by their inverse so
// that 41.5 percent becomes exactly 0.415.
func (s metricSpec) convert(v float64) float64 {
	if s.scale > 0 && s.scale < 1 {
		return v / (1 / s.scale)
	}
	return v * s.scale
}

// query is one MetricDataQuery and where its value goes.
type query struct {
	id      string // ^[a-z][a-zA-Z0-9_]*$, unique in a call
	service string
	spec    metricSpec
}

// buildQueries returns one query per service and spec, with stable,
// readable ids (s<service index>_<metric>_<stat>).
func buildQueries(services []string, containerInsights bool) []query {
	var qs []query
	for i, svc := range services {
		for _, sp := range specs(containerInsights) {
			qs = append(qs, query{
				id:      fmt.Sprintf("s%d_%s_%s", i, strings.ToLower(sp.name), strings.ToLower(sp.stat)),
				service: svc,
				spec:    sp,
			})
		}
	}
	return qs
}

func (q query) toAPI(cluster string, periodSeconds int32) types.MetricDataQuery {
	return types.MetricDataQuery{
		Id:         aws.String(q.id),
		ReturnData: aws.Bool(true),
		MetricStat: &types.MetricStat{
			Metric: &types.Metric{
				Namespace:  aws.String(q.spec.namespace),
				MetricName: aws.String(q.spec.name),
				Dimensions: []types.Dimension{
					{Name: aws.String("ClusterName"), Value: aws.String(cluster)},
					{Name: aws.String("ServiceName"), Value: aws.String(q.service)},
				},
			},
			Period: aws.Int32(periodSeconds),
			Stat:   aws.String(q.spec.stat),
		},
	}
}

// batches splits qs into chunks of at most n (GetMetricData takes at most
// 500 queries per call).
func batches(qs []query, n int) [][]query {
	if n <= 0 || n > MaxQueriesPerCall {
		n = MaxQueriesPerCall
	}
	var out [][]query
	for len(qs) > 0 {
		k := min(n, len(qs))
		out = append(out, qs[:k])
		qs = qs[k:]
	}
	return out
}
