{{- define "batchd.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "batchd.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "batchd.labels" -}}
{{ include "batchd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "batchd.modelName" -}}
{{- default (trimSuffix ".gguf" .Values.models.file) .Values.modelName -}}
{{- end -}}

{{- define "batchd.eppName" -}}
{{- default (printf "%s-epp" (include "batchd.fullname" .)) .Values.inferencePool.endpointPicker.serviceName -}}
{{- end -}}
