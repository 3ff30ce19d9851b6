{{/* Name of the release's objects. */}}
{{- define "playpen.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "playpen.labels" -}}
app.kubernetes.io/name: playpen-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: playpen
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "playpen.selectorLabels" -}}
app.kubernetes.io/name: playpen-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "playpen.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Rules the operator needs on the namespaces it watches (see docs/operations.md). */}}
{{- define "playpen.operatorRules" -}}
- apiGroups: ["playpen.dev"]
  resources: ["browsersessions"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["playpen.dev"]
  resources: ["browsersessions/status"]
  verbs: ["get", "patch"]
- apiGroups: ["playpen.dev"]
  resources: ["browserpools"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["playpen.dev"]
  resources: ["browserpools/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: ["playpen.dev"]
  resources: ["browsersnapshots"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["playpen.dev"]
  resources: ["browsersnapshots/status"]
  verbs: ["get", "patch"]
- apiGroups: [""]
  resources: ["pods", "configmaps", "services", "persistentvolumeclaims"]
  verbs: ["get", "list", "watch", "create", "patch"]
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["get", "list", "watch", "create", "patch"]
# A snapshot's policy admits the operator to its source's runtime only
# while the snapshot is taken, then goes.
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["delete"]
# Failed browser Pods are replaced; a pool's surplus, outdated or broken
# warm browsers are deleted with their ConfigMap and Secret.
- apiGroups: [""]
  resources: ["pods", "configmaps"]
  verbs: ["delete"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "create", "patch", "delete"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end -}}

{{/* A map as key=value pairs, comma-separated, in key order. */}}
{{- define "playpen.keyValues" -}}
{{- $pairs := list -}}
{{- range $k, $v := . -}}
{{- $pairs = append $pairs (printf "%s=%s" $k $v) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}
