{{/*
kilo-mesh.etcdTLS generates the etcd cluster's CA and its peer, server and
client certificates (the names and usages of
artifacts/components/ha/etcd-certificates.yaml, where cert-manager makes
them) once per rendering and leaves them in .Values.generatedEtcdTLS, so that
the Secrets and the pods' checksums see the same ones. An upgrade reads the
Secrets of the release back (lookup) and keeps the CA, and every certificate
that CA signed; a missing one is made anew from the same CA. Without a
cluster (helm template) everything is new at each rendering.
*/}}
{{- define "kilo-mesh.etcdTLS" -}}
{{- if not (hasKey .Values "generatedEtcdTLS") -}}
{{- $ns := .Release.Namespace -}}
{{- $days := int .Values.ha.etcd.certificateValidityDays -}}
{{- $old := dict -}}
{{- range $name := list "ca" "peer" "server" "client" -}}
{{- $secret := lookup "v1" "Secret" $ns (printf "kilo-mesh-etcd-%s" $name) -}}
{{- $_ := set $old $name (get $secret "data" | default dict) -}}
{{- end -}}
{{- $ca := dict -}}
{{- if and (get $old.ca "tls.crt") (get $old.ca "tls.key") -}}
{{- $ca = buildCustomCert (get $old.ca "tls.crt") (get $old.ca "tls.key") -}}
{{- else -}}
{{- $ca = genCA "kilo-mesh-etcd-ca" $days -}}
{{- end -}}
{{- $caCrt := $ca.Cert | b64enc -}}
{{- $wildcards := list (printf "*.kilo-mesh-etcd.%s.svc" $ns) (printf "*.kilo-mesh-etcd.%s.svc.%s" $ns .Values.clusterDomain) -}}
{{- $specs := dict
  "peer" (dict "cn" "kilo-mesh-etcd-peer" "ips" (list) "dns" $wildcards)
  "server" (dict "cn" "kilo-mesh-etcd" "ips" (list "127.0.0.1") "dns" (concat $wildcards (list (printf "kilo-mesh-etcd.%s.svc" $ns) "localhost")))
  "client" (dict "cn" "kilo-mesh-apiserver" "ips" (list) "dns" (list)) -}}
{{- $out := dict "ca" (dict "tls.crt" $caCrt "tls.key" ($ca.Key | b64enc) "ca.crt" $caCrt) -}}
{{- range $name, $spec := $specs -}}
{{- $prev := get $old $name -}}
{{- if and (eq (get $prev "ca.crt") $caCrt) (get $prev "tls.crt") (get $prev "tls.key") -}}
{{- $_ := set $out $name (dict "tls.crt" (get $prev "tls.crt") "tls.key" (get $prev "tls.key") "ca.crt" $caCrt) -}}
{{- else -}}
{{- $cert := genSignedCert $spec.cn $spec.ips $spec.dns $days $ca -}}
{{- $_ := set $out $name (dict "tls.crt" ($cert.Cert | b64enc) "tls.key" ($cert.Key | b64enc) "ca.crt" $caCrt) -}}
{{- end -}}
{{- end -}}
{{- $_ := set .Values "generatedEtcdTLS" $out -}}
{{- end -}}
{{- end }}

{{/* The checksum of the certificate in Secret kilo-mesh-etcd-<.name>, for a pod annotation: new certificates roll the pods. */}}
{{- define "kilo-mesh.etcdCertsChecksum" -}}
{{- include "kilo-mesh.etcdTLS" .root -}}
{{- get (get .root.Values.generatedEtcdTLS .name) "tls.crt" | sha256sum -}}
{{- end }}
