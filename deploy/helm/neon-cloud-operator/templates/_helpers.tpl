{{/* Name of every object: the release name, or release-chart when it does not contain the chart's name. */}}
{{- define "neon-cloud-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "neon-cloud-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "neon-cloud-operator.labels" -}}
{{ include "neon-cloud-operator.selectorLabels" . }}
app.kubernetes.io/part-of: neon-cloud-operator
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
The operator's rules on the resources it manages, granted cluster-wide by the
ClusterRole or per watched namespace by a Role. files/rbac/operator.yaml is generated
from src/api/rbac.ts (npm run generate), as deploy/cluster/operator-roles.yaml is.
*/}}
{{- define "neon-cloud-operator.rules" -}}
{{ .Files.Get "files/rbac/operator.yaml" }}
{{- end -}}

{{- define "neon-cloud-operator.serviceAccountSubject" -}}
- kind: ServiceAccount
  name: {{ include "neon-cloud-operator.fullname" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}
