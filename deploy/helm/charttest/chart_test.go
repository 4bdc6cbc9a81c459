package charttest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	eppconfig "sigs.k8s.io/gateway-api-inference-extension/apix/config/v1alpha1"

	giev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/batchd/batchd/config"
)

const chartDir = "../batchd"

// rendered is one variant's objects, by kind and name.
type rendered struct {
	deploy  *appsv1.Deployment
	objects map[string]any // "Kind/name"
	config  config.Config  // the ConfigMap's batchd.toml, read by batchd's own loader
	epp     *eppconfig.EndpointPickerConfig
}

func load(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// render renders the chart over overrides (YAML) as Helm install would,
// values checked against values.schema.json, and decodes every object.
func render(t *testing.T, overrides string) (*rendered, error) {
	t.Helper()
	ch := load(t)
	vals, err := chartutil.ReadValues([]byte(overrides))
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "demo", Namespace: "ai", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	out := &rendered{objects: map[string]any{}}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(files[name], "\n---") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			if err := out.decode(t, name, []byte(doc)); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// decode reads one object strictly into its type.
func (r *rendered) decode(t *testing.T, file string, doc []byte) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var obj any
	switch head.APIVersion + " " + head.Kind {
	case "apps/v1 Deployment":
		r.deploy = &appsv1.Deployment{}
		obj = r.deploy
	case "v1 Service":
		obj = &corev1.Service{}
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "policy/v1 PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "networking.k8s.io/v1 NetworkPolicy":
		obj = &networkingv1.NetworkPolicy{}
	case "inference.networking.k8s.io/v1 InferencePool":
		obj = &giev1.InferencePool{}
	case "keda.sh/v1alpha1 ScaledObject":
		obj = &kedav1alpha1.ScaledObject{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		obj = &ServiceMonitor{}
	default:
		return fmt.Errorf("%s: unexpected object %s %s", file, head.APIVersion, head.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return fmt.Errorf("%s: %s %s does not decode strictly: %w", file, head.Kind, head.Metadata.Name, err)
	}
	if so, ok := obj.(*kedav1alpha1.ScaledObject); ok {
		if err := validateScaledObject(so); err != nil {
			return fmt.Errorf("%s: KEDA refuses ScaledObject %s: %w", file, head.Metadata.Name, err)
		}
	}
	key := head.Kind + "/" + head.Metadata.Name
	if _, dup := r.objects[key]; dup {
		return fmt.Errorf("%s: %s rendered twice", file, key)
	}
	r.objects[key] = obj
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		return r.configMap(t, cm)
	}
	return nil
}

// configMap checks the daemon's config (with batchd's own strict loader)
// and the endpoint picker's.
func (r *rendered) configMap(t *testing.T, cm *corev1.ConfigMap) error {
	if toml, ok := cm.Data["batchd.toml"]; ok {
		path := filepath.Join(t.TempDir(), "batchd.toml")
		if err := os.WriteFile(path, []byte(toml), 0o600); err != nil {
			return err
		}
		c, err := config.LoadFile(path)
		if err != nil {
			return fmt.Errorf("ConfigMap %s: batchd refuses its config: %w", cm.Name, err)
		}
		r.config = c
	}
	if epp, ok := cm.Data["epp-config.yaml"]; ok {
		r.epp = &eppconfig.EndpointPickerConfig{}
		if err := yaml.UnmarshalStrict([]byte(epp), r.epp); err != nil {
			return fmt.Errorf("ConfigMap %s: the EPP config: %w", cm.Name, err)
		}
	}
	return nil
}

func mustRender(t *testing.T, overrides string) *rendered {
	t.Helper()
	r, err := render(t, overrides)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestChartLints: helm lint (Helm's own rules and the schema) passes with
// no warning for the default values and each variant.
func TestChartLints(t *testing.T) {
	for _, v := range variants {
		vals, err := chartutil.ReadValues([]byte(v.values))
		if err != nil {
			t.Fatal(err)
		}
		res := lint.AllWithKubeVersion(chartDir, vals, "ai", nil)
		for _, m := range res.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("%s: lint: %s", v.name, m)
			}
		}
	}
}

var variants = []struct{ name, values string }{
	{"default", ""},
	{"gpu", "gpu:\n  enabled: true\n  count: 2\n"},
	{"scale-to-zero", "keda:\n  enabled: true\n  scaleToZero:\n    enabled: true\nserviceMonitor:\n  labels:\n    release: kube-prometheus-stack\n"},
	{"pvc", "models:\n  file: qwen2.5-7b-q4_k_m.gguf\n  pvc:\n    claimName: shared-models\n    subPath: llm\nmodelName: qwen2.5-7b\n"},
	{"oci-image", "models:\n  pvc:\n    claimName: \"\"\n  image:\n    reference: registry.local/models/qwen:7b\n"},
	{"no-kv-events", "kvEvents:\n  enabled: false\nserviceMonitor:\n  enabled: true\n"},
	{"keda", "keda:\n  enabled: true\nnetworkPolicy:\n  eppNamespace: llm-d\n"},
}

func TestChartRendersEveryVariant(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			r := mustRender(t, v.values)
			checkCommon(t, r)
		})
	}
}

// checkCommon: what every variant must keep.
func checkCommon(t *testing.T, r *rendered) {
	t.Helper()
	d := r.deploy
	if d == nil {
		t.Fatal("no Deployment")
	}
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" {
			t.Errorf("%s probe %+v, want GET /health", name, p)
		}
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil {
		t.Error("no liveness probe")
	}
	drain := r.config.DrainTimeout.Duration.Seconds()
	if pod.TerminationGracePeriodSeconds == nil || float64(*pod.TerminationGracePeriodSeconds) <= drain {
		t.Errorf("terminationGracePeriodSeconds %v, drain_timeout %vs", pod.TerminationGracePeriodSeconds, drain)
	}
	if r.config.Server.HTTPListen == "" || r.config.Engine.BlockSize == 0 {
		t.Errorf("config: http_listen %q, block_size %d", r.config.Server.HTTPListen, r.config.Engine.BlockSize)
	}
	if a := pod.Affinity; a == nil || a.PodAntiAffinity == nil ||
		len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("affinity %+v: want one replica per node preferred", pod.Affinity)
	}
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Error("the pod may run as root")
	}
	var configVol *corev1.Volume
	for i := range pod.Volumes {
		if pod.Volumes[i].ConfigMap != nil {
			configVol = &pod.Volumes[i]
		}
	}
	for _, m := range c.VolumeMounts {
		if configVol != nil && m.Name == configVol.Name && m.SubPath != "" {
			t.Error("the config is mounted by subPath: a ConfigMap edit would never reach the pod")
		}
	}
	for _, k := range []string{"Service/demo-batchd", "PodDisruptionBudget/demo-batchd", "InferencePool/demo-batchd"} {
		if r.objects[k] == nil {
			t.Errorf("no %s", k)
		}
	}
	pool, _ := r.objects["InferencePool/demo-batchd"].(*giev1.InferencePool)
	if pool != nil {
		labels := d.Spec.Template.Labels
		for k, v := range pool.Spec.Selector.MatchLabels {
			if labels[string(k)] != string(v) {
				t.Errorf("the pool selects %s=%s, the pods have %q", k, v, labels[string(k)])
			}
		}
		if l := d.Spec.Template.Labels; l["llm-d.ai/engine-type"] != "vllm" || l["inference.networking.k8s.io/engine-type"] != "vllm" {
			t.Errorf("pod labels %v: want llm-d's engine-type label (and the older one)", l)
		}
		if pool.Labels["inference.networking.k8s.io/engine-type"] == "" || len(pool.Spec.TargetPorts) != 1 ||
			int32(pool.Spec.TargetPorts[0].Number) != c.Ports[0].ContainerPort {
			t.Errorf("InferencePool %+v", pool)
		}
	}
	if r.epp == nil || len(r.epp.SchedulingProfiles) != 1 {
		t.Fatalf("EPP config %+v", r.epp)
	}
}

func TestChartVariants(t *testing.T) {
	gpu := mustRender(t, variants[1].values).deploy.Spec.Template.Spec.Containers[0].Resources.Limits
	if q := gpu["nvidia.com/gpu"]; q.Value() != 2 {
		t.Errorf("GPU limits %v", gpu)
	}
	if def := mustRender(t, "").deploy.Spec.Template.Spec.Containers[0].Resources.Limits; len(def) != 1 {
		t.Errorf("default limits %v, want memory only (no GPU)", def)
	}

	z := mustRender(t, variants[2].values)
	so, _ := z.objects["ScaledObject/demo-batchd"].(*kedav1alpha1.ScaledObject)
	if so == nil || so.Spec.IdleReplicaCount == nil || *so.Spec.IdleReplicaCount != 0 || so.Spec.MinReplicaCount == nil || *so.Spec.MinReplicaCount != 1 ||
		len(so.Spec.Triggers) != 2 || !strings.Contains(so.Spec.Triggers[0].Metadata["query"], "vllm:num_requests_waiting") {
		t.Fatalf("scale-to-zero ScaledObject %+v", so)
	}
	// At zero no pod takes a request, so the picker counts none routed; what
	// it holds in its flow control queue must wake the pool.
	if q := so.Spec.Triggers[1].Metadata["query"]; !strings.Contains(q, "inference_extension_flow_control_queue_size") {
		t.Errorf("scale-to-zero activation %s: nothing that wakes a pool at zero", q)
	}
	if q := so.Spec.Triggers[0].Metadata["query"]; !strings.Contains(q, fmt.Sprintf("model_name=%q", z.config.DefaultModelName())) {
		t.Errorf("KEDA's query %s filters on another name than the one batchd serves (%q)", q, z.config.DefaultModelName())
	}
	// KEDA reads what Prometheus scraped: the ServiceMonitor comes with it,
	// with the labels Prometheus' selector wants.
	if sm, _ := z.objects["ServiceMonitor/demo-batchd"].(*ServiceMonitor); sm == nil || sm.Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("KEDA on: ServiceMonitor %+v, want one labelled for Prometheus' selector", sm)
	}
	if z.deploy.Spec.Replicas != nil {
		t.Error("the Deployment sets replicas under KEDA: every upgrade would fight the autoscaler")
	}

	p := mustRender(t, variants[3].values)
	vol := p.deploy.Spec.Template.Spec.Volumes
	if !slices.ContainsFunc(vol, func(v corev1.Volume) bool {
		return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "shared-models" && v.PersistentVolumeClaim.ReadOnly
	}) || p.config.Model.Path != "/models/qwen2.5-7b-q4_k_m.gguf" || p.config.DefaultModelName() != "qwen2.5-7b" {
		t.Errorf("PVC variant: volumes %+v, model %q served as %q", vol, p.config.Model.Path, p.config.DefaultModelName())
	}
	o := mustRender(t, variants[4].values)
	if !slices.ContainsFunc(o.deploy.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Image != nil && v.Image.Reference == "registry.local/models/qwen:7b"
	}) {
		t.Error("OCI image variant: no image volume")
	}
	if k := mustRender(t, variants[6].values); k.objects["ServiceMonitor/demo-batchd"] == nil || k.objects["ScaledObject/demo-batchd"] == nil {
		t.Error("KEDA without scale to zero: a ScaledObject and the ServiceMonitor its query reads")
	}
	if n := mustRender(t, variants[5].values); n.objects["ServiceMonitor/demo-batchd"] == nil ||
		n.objects["NetworkPolicy/demo-batchd-kv-events"] != nil || n.config.KVEvents.Endpoint != "" {
		t.Error("without KV events: a ServiceMonitor, no kv NetworkPolicy, no endpoint")
	}
}

// TestEndpointPickerConfig: the picker's plugins carry only parameters
// llm-d reads (it decodes them strictly, and stops at start on an unknown
// one): the token producer reaches batchd's render endpoints through its
// vllm url; no in-picker tokenizer pool (indexerConfig.tokenizersPoolConfig,
// which needs a sidecar) is asked for.
func TestEndpointPickerConfig(t *testing.T) {
	r := mustRender(t, "")
	found := false
	for _, p := range r.epp.Plugins {
		var params map[string]any
		if err := json.Unmarshal(p.Parameters, &params); len(p.Parameters) > 0 && err != nil {
			t.Fatalf("%s parameters: %v", p.Type, err)
		}
		switch p.Type {
		case "token-producer":
			found = true
			vllm, _ := params["vllm"].(map[string]any)
			if len(params) != 2 || params["modelName"] != r.config.DefaultModelName() ||
				vllm["url"] != "http://demo-batchd.ai.svc:8000" || len(vllm) != 1 {
				t.Errorf("token-producer parameters %v", params)
			}
		case "precise-prefix-cache-scorer":
			if _, ok := params["indexerConfig"]; ok {
				t.Errorf("precise-prefix-cache-scorer asks for an in-picker tokenizer: %v", params)
			}
		}
	}
	if !found {
		t.Error("no token-producer with KV events on")
	}
}

// TestNetworkPolicyAdmitsThePicker: the KV events' NetworkPolicy admits
// the pods of the picker the InferencePool names, by the label the Gateway
// API Inference Extension's inferencepool chart (which llm-d's router
// installs) puts on them, inferencepool: <service name>; in another
// namespace, through a namespaceSelector.
func TestNetworkPolicyAdmitsThePicker(t *testing.T) {
	for _, v := range []struct{ values, ns string }{{"", ""}, {"networkPolicy:\n  eppNamespace: llm-d\n", "llm-d"}} {
		r := mustRender(t, v.values)
		pool, _ := r.objects["InferencePool/demo-batchd"].(*giev1.InferencePool)
		np, _ := r.objects["NetworkPolicy/demo-batchd-kv-events"].(*networkingv1.NetworkPolicy)
		if pool == nil || np == nil || len(np.Spec.Ingress) != 2 || len(np.Spec.Ingress[1].From) != 1 {
			t.Fatalf("pool %v, policy %+v", pool != nil, np)
		}
		from := np.Spec.Ingress[1].From[0]
		picker := string(pool.Spec.EndpointPickerRef.Name)
		if from.PodSelector == nil || len(from.PodSelector.MatchLabels) != 1 || from.PodSelector.MatchLabels["inferencepool"] != picker {
			t.Errorf("the policy admits %v; the picker %s's pods are labelled inferencepool=%s", from.PodSelector, picker, picker)
		}
		got := ""
		if from.NamespaceSelector != nil {
			got = from.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]
		}
		if got != v.ns {
			t.Errorf("namespace selector %v, want %q", from.NamespaceSelector, v.ns)
		}
	}
}

// validateScaledObject runs KEDA's own checks that need no cluster (its
// admission webhook's, v2.21.0): replica bounds, fallback, triggers.
func validateScaledObject(so *kedav1alpha1.ScaledObject) error {
	if err := kedav1alpha1.CheckReplicaCountBoundsAreValid(so); err != nil {
		return err
	}
	if err := kedav1alpha1.CheckFallbackValid(so); err != nil {
		return err
	}
	return kedav1alpha1.ValidateTriggers(so.Spec.Triggers)
}

// TestChartRefuses: values the schema or the templates must reject.
func TestChartRefuses(t *testing.T) {
	for _, bad := range []string{
		"terminationGracePeriodSeconds: 20\ndrainTimeoutSeconds: 30\n", // killed mid-drain
		"replica: 3\n",                           // a typo: unknown key
		"port: 70000\n",                          // not a port
		"models:\n  pvc:\n    claimName: \"\"\n", // no model source
		"modelName: a@b\n",                       // would break the topic
		"keda:\n  enabled: true\n  minReplicas: 5\n  maxReplicas: 2\n", // KEDA's own check refuses it
	} {
		if _, err := render(t, bad); err == nil {
			t.Errorf("rendered with %q", bad)
		}
	}
}
