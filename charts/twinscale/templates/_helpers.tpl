{{/*
Names, labels and the checks shared by the templates.

Labels: the app.kubernetes.io set without helm.sh/chart or app.kubernetes.io/managed-by, because the
default render is also shipped as plain manifests (deploy/, made by hack/generate-deploy.sh) that
kubectl, not Helm, manages.
*/}}

{{- define "twinscale.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object's name: the release name when it already says twinscale. */}}
{{- define "twinscale.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "twinscale.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "twinscale.labels" -}}
app.kubernetes.io/name: {{ include "twinscale.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: twinscale
{{- end -}}

{{/* The controller's pods: what its Deployment, PDB and Services select on. */}}
{{- define "twinscale.selectorLabels" -}}
app.kubernetes.io/name: {{ include "twinscale.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{- define "twinscale.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (printf "%s-controller" (include "twinscale.fullname" .)) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "twinscale.leaseName" -}}
{{- default (printf "%s-controller" (include "twinscale.fullname" .)) .Values.leaderElection.leaseName -}}
{{- end -}}

{{/*
The controller image: repository with its digest, else with its tag. No default: no twinscale image
is published, so a render without one fails saying how to build it (the Dockerfile at the
repository root) and which values name it.
*/}}
{{- define "twinscale.image" -}}
{{- if or (not .Values.image.repository) (not (or .Values.image.tag .Values.image.digest)) -}}
{{- fail `image.repository and image.tag are required: no twinscale image is published. Build it from the repository root with "docker build -t twinscale:dev .", push it where the cluster pulls from (kind: "kind load docker-image twinscale:dev"), and name it: --set image.repository=twinscale --set image.tag=dev (or your registry's name and tag; image.digest pins a digest instead of a tag)` -}}
{{- end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository .Values.image.tag -}}
{{- end -}}
{{- end -}}

{{/* "true" when the gRPC server runs (KEDA's external scaler or the admission API). */}}
{{- define "twinscale.grpcEnabled" -}}
{{- if or .Values.keda.enabled .Values.admission.enabled -}}true{{- end -}}
{{- end -}}

{{/* "true" when the gRPC server uses TLS (server or mutual). Fails on an unknown mode. */}}
{{- define "twinscale.grpcTLS" -}}
{{- if not (has .Values.grpc.tls.mode (list "mutual" "server" "plaintext")) -}}
{{- fail (printf "grpc.tls.mode must be mutual, server or plaintext, got %q" .Values.grpc.tls.mode) -}}
{{- end -}}
{{- if and (include "twinscale.grpcEnabled" .) (ne .Values.grpc.tls.mode "plaintext") -}}true{{- end -}}
{{- end -}}

{{/* The Secret holding the gRPC server's tls.crt, tls.key (and ca.crt for mutual TLS). */}}
{{- define "twinscale.grpcSecretName" -}}
{{- if .Values.certManager.enabled -}}
{{- default (printf "%s-grpc-tls" (include "twinscale.fullname" .)) .Values.grpc.tls.secretName -}}
{{- else -}}
{{- required "grpc.tls.secretName is required when keda.enabled or admission.enabled serve TLS without certManager.enabled (or set grpc.tls.mode: plaintext)" .Values.grpc.tls.secretName -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the external metrics server's tls.crt and tls.key. */}}
{{- define "twinscale.externalMetricsSecretName" -}}
{{- if .Values.certManager.enabled -}}
{{- default (printf "%s-external-metrics-tls" (include "twinscale.fullname" .)) .Values.externalMetrics.tls.secretName -}}
{{- else -}}
{{- required "externalMetrics.tls.secretName is required when externalMetrics.enabled without certManager.enabled" .Values.externalMetrics.tls.secretName -}}
{{- end -}}
{{- end -}}

{{/* The issuer of the server certificates: the user's, or the chart's own CA. */}}
{{- define "twinscale.issuerRef" -}}
{{- if .Values.certManager.issuerRef.name -}}
name: {{ .Values.certManager.issuerRef.name }}
kind: {{ default "Issuer" .Values.certManager.issuerRef.kind }}
group: {{ default "cert-manager.io" .Values.certManager.issuerRef.group }}
{{- else -}}
name: {{ include "twinscale.fullname" . }}-ca
kind: Issuer
group: cert-manager.io
{{- end -}}
{{- end -}}
