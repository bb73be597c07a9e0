{{/* Names, labels and the pieces every pod of the chart shares. */}}

{{- define "gitops-portal.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gitops-portal.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gitops-portal.readerName" -}}
{{- printf "%s-reader" (include "gitops-portal.fullname" .) -}}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "web") */}}
{{- define "gitops-portal.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gitops-portal.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end -}}

{{/* Every object's labels: (dict "root" $ "component" "web"); component may be empty. */}}
{{- define "gitops-portal.labels" -}}
{{ include "gitops-portal.selectorLabels" . }}
app.kubernetes.io/part-of: gitops-portal
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The image: the chart's appVersion unless image.tag is set; never "latest". */}}
{{- define "gitops-portal.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion | toString -}}
{{- if eq $tag "latest" -}}
{{- fail "image.tag: \"latest\" is a floating tag; name a version" -}}
{{- end -}}
{{- if .Values.image.digest -}}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* The Host header of the web probes: Django answers only the hosts in ALLOWED_HOSTS. */}}
{{- define "gitops-portal.probeHost" -}}
{{- if .Values.web.probeHost -}}
{{- .Values.web.probeHost -}}
{{- else -}}
{{- $first := (splitList "," (.Values.config.ALLOWED_HOSTS | default "localhost" | toString)) | first | trim | trimPrefix "." -}}
{{- if or (eq $first "*") (eq $first "") -}}localhost{{- else -}}{{ $first }}{{- end -}}
{{- end -}}
{{- end -}}

{{/* Pod-level fields every pod shares. */}}
{{- define "gitops-portal.podCommon" -}}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
volumes:
  - {name: tmp, emptyDir: {}}
  - {name: var, emptyDir: {}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Container fields every container shares (image, securityContext, the writable mounts). */}}
{{- define "gitops-portal.containerCommon" -}}
image: {{ include "gitops-portal.image" . | quote }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
volumeMounts:
  - {name: tmp, mountPath: /tmp}
  - {name: var, mountPath: /app/var}
{{- end -}}

{{/* Every non-secret setting, as a YAML map: values.config, then sign-in from values.oidc (its client
secret is PORTAL_OIDC_CLIENT_SECRET in the existing Secret). The ConfigMap and the migrate hook,
which runs before the ConfigMap exists, both render this one list. */}}
{{- define "gitops-portal.settings" -}}
{{- $settings := dict -}}
{{- range $key, $value := .Values.config }}
{{- $_ := set $settings $key ($value | toString) }}
{{- end }}
{{- with .Values.oidc }}
{{- $_ := set $settings "PORTAL_LOCAL_LOGIN" (ternary "1" "0" .localLogin) }}
{{- if .issuer }}
{{- $_ := set $settings "PORTAL_OIDC_ISSUER" .issuer }}
{{- $_ := set $settings "PORTAL_OIDC_CLIENT_ID" .clientId }}
{{- $_ := set $settings "PORTAL_OIDC_NAME" .name }}
{{- $_ := set $settings "PORTAL_OIDC_SCOPES" .scopes }}
{{- $_ := set $settings "PORTAL_OIDC_GROUPS_CLAIM" .groupsClaim }}
{{- $_ := set $settings "PORTAL_OIDC_ADMIN_GROUPS" (join "," .adminGroups) }}
{{- $_ := set $settings "PORTAL_OIDC_MEMBER_GROUPS" (join "," .memberGroups) }}
{{- $_ := set $settings "PORTAL_OIDC_VIEWER_GROUPS" (join "," .viewerGroups) }}
{{- end }}
{{- end }}
{{- toYaml $settings }}
{{- end -}}

{{/* The portal's settings: the chart's ConfigMap, then the Secret you created. */}}
{{- define "gitops-portal.envFrom" -}}
envFrom:
  - configMapRef: {name: {{ include "gitops-portal.fullname" . }}-config}
  - secretRef: {name: {{ .Values.existingSecret }}}
{{- end -}}

{{/* Restarts pods when the settings in the ConfigMap change. */}}
{{- define "gitops-portal.configChecksum" -}}
checksum/config: {{ include "gitops-portal.settings" . | sha256sum }}
{{- end -}}
