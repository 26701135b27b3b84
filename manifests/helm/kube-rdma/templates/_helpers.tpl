{{/*
What both DaemonSets (rdma-device-plugin, rdma-dra-driver) and the webhook Deployment share.
*/}}

{{/* A container's image, and its pull policy when one is set (else the field is left out). */}}
{{- define "kube-rdma.image" -}}
image: {{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) | quote }}
{{- with .Values.image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end }}

{{/* The node selector of both DaemonSets: the hand-set label, or NFD's PCI vendor label. */}}
{{- define "kube-rdma.daemonNodeSelector" -}}
kubernetes.io/os: linux
{{- if .Values.nfd.nodeSelector }}
# NFD's, where it found a Mellanox/NVIDIA networking PCI device (docs/node-labels.md
# says which NFD worker configuration publishes it). Not one of the labels the daemon
# writes itself: it must run before it can write them.
feature.node.kubernetes.io/pci-15b3.present: "true"
{{- else }}
kube-rdma.io/rdma-node: "true"
{{- end }}
{{- end }}

{{/*
The init container of both DaemonSets: puts the OCI hooks on the host, where the container runtime
runs them for the CDI specs (docs/memlock.md, docs/pod-networks.md): kube-rdma-memlock-hook and
kube-rdma-nccl-hook. Static binaries, so the host's libc does not matter. Each is copied under a
temporary name and renamed: a runtime starting a hook at that moment runs the old file or the new
one, never a half-written one.
*/}}
{{- define "kube-rdma.installHooks" -}}
# The OCI hooks the CDI specs name, put on the host by rename (_helpers.tpl says more).
- name: install-hooks
  {{- include "kube-rdma.image" . | nindent 2 }}
  command:
    - /bin/sh
    - -ec
    - |
      mkdir -p /var/lib/kube-rdma/bin
      for hook in kube-rdma-memlock-hook kube-rdma-nccl-hook; do
        install -m 0755 /usr/bin/$hook /var/lib/kube-rdma/bin/.$hook.new
        mv -f /var/lib/kube-rdma/bin/.$hook.new /var/lib/kube-rdma/bin/$hook
      done
  resources:
    requests:
      cpu: 10m
      memory: 16Mi
    limits:
      # The copies pass through the page cache, which the limit counts: at 16Mi a slow
      # disk had the copy of a debug build's hooks (23 MB) OOM-killed.
      memory: 64Mi
  securityContext:
    # uid 0 owns the host directory; writing there needs no capability.
    runAsUser: 0
    runAsGroup: 0
    runAsNonRoot: false
    privileged: false
    allowPrivilegeEscalation: false
    capabilities:
      drop: ["ALL"]
    readOnlyRootFilesystem: true
  volumeMounts:
    - name: kube-rdma-lib
      mountPath: /var/lib/kube-rdma
{{- end }}
