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
ClusterRole or per watched namespace by a Role. Same as deploy/base/clusterrole.yaml.
*/}}
{{- define "neon-cloud-operator.rules" -}}
# Watch the resources and add or remove the operator's finalizer (a JSON patch).
- apiGroups: [neoncloud.dev]
  resources: [computeendpoints, apikeys]
  verbs: [get, list, watch, update, patch]
# Report state; status is a separate subresource with its own permission.
- apiGroups: [neoncloud.dev]
  resources: [computeendpoints/status, apikeys/status]
  verbs: [get, update, patch]
# Owner references with blockOwnerDeletion need update on the owner's finalizers.
- apiGroups: [neoncloud.dev]
  resources: [computeendpoints/finalizers, apikeys/finalizers]
  verbs: [update]
# ApiKey writes the Secrets it owns; both kinds read the credentials Secret a resource names.
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, list, watch, create, update, patch, delete]
# ComputeEndpoint publishes connection details in a ConfigMap it owns.
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, update, patch, delete]
# Events on the resources (repeats are aggregated by a patch).
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
{{- end -}}

{{- define "neon-cloud-operator.serviceAccountSubject" -}}
- kind: ServiceAccount
  name: {{ include "neon-cloud-operator.fullname" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}
