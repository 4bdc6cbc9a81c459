package charttest

// The custom resources the chart renders, as far as it uses them; strict
// decoding refuses any field outside these, so a typo in a template fails.

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// InferencePool: inference.networking.k8s.io/v1 (Gateway API Inference
// Extension, api/v1/inferencepool_types.go).
type InferencePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		TargetPorts []struct {
			Number int32 `json:"number"`
		} `json:"targetPorts"`
		EndpointPickerRef struct {
			Name string `json:"name"`
			Port struct {
				Number int32 `json:"number"`
			} `json:"port"`
		} `json:"endpointPickerRef"`
	} `json:"spec"`
}

// ScaledObject: keda.sh/v1alpha1.
type ScaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ScaleTargetRef struct {
			Name string `json:"name"`
		} `json:"scaleTargetRef"`
		PollingInterval  int32  `json:"pollingInterval"`
		MinReplicaCount  int32  `json:"minReplicaCount"`
		MaxReplicaCount  int32  `json:"maxReplicaCount"`
		IdleReplicaCount *int32 `json:"idleReplicaCount,omitempty"`
		CooldownPeriod   int32  `json:"cooldownPeriod"`
		Advanced         struct {
			HorizontalPodAutoscalerConfig struct {
				Behavior map[string]any `json:"behavior"`
			} `json:"horizontalPodAutoscalerConfig"`
		} `json:"advanced"`
		Triggers []struct {
			Type     string            `json:"type"`
			Name     string            `json:"name"`
			Metadata map[string]string `json:"metadata"`
		} `json:"triggers"`
	} `json:"spec"`
}

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
