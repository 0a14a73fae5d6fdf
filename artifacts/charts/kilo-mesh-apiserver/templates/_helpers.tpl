{{/*
Object names are fixed, as in artifacts/deploy: the APIService, its
ClusterRoles and the user roles are cluster-wide and the server looks for its
Service, Secret and Lease by these names, so one release per cluster.
*/}}

{{/* Labels of every object: those of artifacts/deploy, plus Helm's. */}}
{{- define "kilo-mesh.labels" -}}
app.kubernetes.io/name: {{ .name | default "kilo-mesh-apiserver" }}
app.kubernetes.io/part-of: kilo-mesh
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end }}

{{/* Labels selecting the server's pods (and no etcd member). */}}
{{- define "kilo-mesh.apiserverSelector" -}}
app.kubernetes.io/name: kilo-mesh-apiserver
app.kubernetes.io/component: apiserver
{{- end }}

{{- define "kilo-mesh.etcdSelector" -}}
app.kubernetes.io/name: kilo-mesh-etcd
app.kubernetes.io/component: etcd
{{- end }}

{{/* The server's image: repository with the digest, else the tag (the chart's appVersion by default). */}}
{{- define "kilo-mesh.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/* The members' stable names through the headless Service. */}}
{{- define "kilo-mesh.etcdMember" -}}
kilo-mesh-etcd-{{ .i }}.kilo-mesh-etcd.{{ .ns }}.svc
{{- end }}

{{- define "kilo-mesh.etcdServers" -}}
{{- $out := list -}}
{{- range $i := until 3 -}}
{{- $out = append $out (printf "https://%s:2379" (include "kilo-mesh.etcdMember" (dict "i" $i "ns" $.Release.Namespace))) -}}
{{- end -}}
{{ join "," $out }}
{{- end }}

{{- define "kilo-mesh.etcdInitialCluster" -}}
{{- $out := list -}}
{{- range $i := until 3 -}}
{{- $out = append $out (printf "kilo-mesh-etcd-%d=https://%s:2380" $i (include "kilo-mesh.etcdMember" (dict "i" $i "ns" $.Release.Namespace))) -}}
{{- end -}}
{{ join "," $out }}
{{- end }}

{{/* Scheduling values shared by every pod of the chart. */}}
{{- define "kilo-mesh.scheduling" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Preferred anti-affinity over nodes (or .affinity, if given) and a soft spread over zones for the pods selected by .selector. */}}
{{- define "kilo-mesh.spread" -}}
affinity:
  {{- with .affinity }}
  {{- toYaml . | nindent 2 }}
  {{- else }}
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- .selector | nindent 12 }}
  {{- end }}
topologySpreadConstraints:
- maxSkew: 1
  topologyKey: topology.kubernetes.io/zone
  whenUnsatisfiable: ScheduleAnyway
  labelSelector:
    matchLabels:
      {{- .selector | nindent 6 }}
{{- end }}

{{- define "kilo-mesh.containerSecurityContext" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  runAsNonRoot: true
  capabilities:
    drop: ["ALL"]
{{- end }}
