package charttest

// The custom resources the chart renders, as far as it uses them; strict
// decoding refuses any field outside these, so a typo in a template fails.

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

// EndpointPickerConfig: inference.networking.x-k8s.io/v1alpha1, the EPP's
// --config-file.
type EndpointPickerConfig struct {
	metav1.TypeMeta `json:",inline"`
	Plugins         []struct {
		Type       string         `json:"type"`
		Parameters map[string]any `json:"parameters,omitempty"`
	} `json:"plugins"`
	SchedulingProfiles []struct {
		Name    string `json:"name"`
		Plugins []struct {
			PluginRef string `json:"pluginRef"`
			Weight    *int   `json:"weight,omitempty"`
		} `json:"plugins"`
	} `json:"schedulingProfiles"`
}
