{{/* The name of every object: the release name, or RELEASE-wasmsched
when the release name does not already say wasmsched. */}}
{{- define "wasmsched.fullname" -}}
{{- if contains "wasmsched" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-wasmsched" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "wasmsched.selectorLabels" -}}
app.kubernetes.io/name: wasmsched
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "wasmsched.labels" -}}
{{ include "wasmsched.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* "true" when leader election is on: as set, else when replicas > 1. */}}
{{- define "wasmsched.leaderElect" -}}
{{- $le := .Values.leaderElection.enabled -}}
{{- if kindIs "invalid" $le -}}
{{- if gt (int .Values.replicas) 1 }}true{{ end -}}
{{- else if $le }}true{{ end -}}
{{- end -}}

{{/* The subject every binding names. */}}
{{- define "wasmsched.subject" -}}
- kind: ServiceAccount
  name: {{ include "wasmsched.fullname" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{/* Refuse values that cannot work: a configuration that is not YAML, an
engine the configuration runs but whose RBAC is off, two replicas
without leader election. */}}
{{- define "wasmsched.validate" -}}
{{- $cfg := fromYaml .Values.config -}}
{{- if hasKey $cfg "Error" -}}
{{- fail (printf "values.config is not YAML: %s" (get $cfg "Error")) -}}
{{- end -}}
{{- if and (hasKey $cfg "eviction") (not .Values.engines.eviction) -}}
{{- fail "values.config has an eviction section but engines.eviction is false: the coordinator could not evict, taint or read usage (set engines.eviction=true)" -}}
{{- end -}}
{{- if and (hasKey $cfg "vpod") (not .Values.engines.vpod) -}}
{{- fail "values.config has a vpod section but engines.vpod is false: the vpod engine could not read VPods or scale StatefulSets (set engines.vpod=true)" -}}
{{- end -}}
{{- if and (gt (int .Values.replicas) 1) (not (include "wasmsched.leaderElect" .)) -}}
{{- fail (printf "replicas is %d but leader election is off: every replica would bind pods" (int .Values.replicas)) -}}
{{- end -}}
{{- end -}}

{{/* "true" when a module of the configuration comes from a registry
(image:), so serve needs a writable directory to keep pulled modules in. */}}
{{- define "wasmsched.imageModules" -}}
{{- $cfg := fromYaml .Values.config -}}
{{- range (get $cfg "modules" | default list) -}}
{{- if and (kindIs "map" .) (get . "image") }}true{{ end -}}
{{- end -}}
{{- end -}}
