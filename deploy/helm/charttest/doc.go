// Package charttest renders and lints the batchd Helm chart with Helm's own
// packages and decodes every object it renders strictly: Kubernetes kinds
// into k8s.io/api types, the CRDs it targets (InferencePool, KEDA's
// ScaledObject, the Prometheus operator's ServiceMonitor, the endpoint
// picker's config) into the fields this chart may use.
package charttest
