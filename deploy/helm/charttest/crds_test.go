package charttest

// The one custom resource the chart renders whose upstream Go type the
// module proxy does not serve (prometheus-operator's ServiceMonitor), as
// far as the chart uses it; strict decoding refuses any field outside it.
// The InferencePool, the EPP config and the ScaledObject decode into the
// Gateway API Inference Extension's and KEDA's own types.

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ServiceMonitor: monitoring.coreos.com/v1.
type ServiceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"endpoints"`
	} `json:"spec"`
}
