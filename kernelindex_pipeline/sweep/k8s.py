"""Kubernetes pod spec for one GPU partition's sweep (PipesK8sClient `base_pod_meta` / `base_pod_spec`).

The pod lands on a node whose NVIDIA GPU Feature Discovery label `nvidia.com/gpu.product` names the
partition's GPU, asks for one `nvidia.com/gpu`, and runs the Pipes entry point of this package. Keys are
camelCase as in the Kubernetes API; dagster-k8s accepts them as they are.
"""

from __future__ import annotations

import re

from ..records.names import kebab
from .host import gpu_catalogue, gpu_name_for_slug

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_RESOURCE = "nvidia.com/gpu"
PIPES_COMMAND = ["python", "-m", "kernelindex_pipeline.sweep.pipes_entry"]
_LABEL_VALUE_LIMIT = 63
_NOT_IN_LABEL = re.compile(r"[^A-Za-z0-9_.-]")


def gpu_product_label(gpu_name: str) -> str:
    """The `nvidia.com/gpu.product` value GPU Feature Discovery gives a GPU of that CUDA name.

    GFD replaces spaces with '-' ("NVIDIA H100 80GB HBM3" -> "NVIDIA-H100-80GB-HBM3"); a Kubernetes label
    value also allows only [A-Za-z0-9_.-], at most 63 characters, alphanumeric at both ends.
    """
    value = _NOT_IN_LABEL.sub("", re.sub(r"\s+", "-", gpu_name.strip()))[:_LABEL_VALUE_LIMIT]
    return value.strip("-_.")


def gpu_pool_labels() -> dict[str, str]:
    """GPU slug -> node label value, for every GPU of the catalogue."""
    return {kebab(name): gpu_product_label(name) for name in gpu_catalogue()}


def sweep_pod(
    gpu_slug: str,
    *,
    image: str,
    namespace: str,
    service_account: str | None = None,
    image_pull_secrets: list[str] | None = None,
    cpu: str = "8",
    memory: str = "64Gi",
    ephemeral_storage: str = "50Gi",
    cache_volume_claim: str | None = None,
    cache_mount_path: str = "/var/cache/kernelindex",
    tolerate_gpu_taint: bool = True,
    extra_node_selector: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
) -> dict:
    """{"namespace", "image", "base_pod_meta", "base_pod_spec"} for PipesK8sClient.run(...).

    `cache_volume_claim` mounts a PersistentVolumeClaim at `cache_mount_path` and points
    KERNELINDEX_CACHE_DIR there, so script environments and release downloads survive the pod.
    """
    gpu_name = gpu_name_for_slug(gpu_slug)  # ValueError for a GPU outside the catalogue
    label = gpu_product_label(gpu_name)
    container_env = {"TZ": "UTC", "PYTHONUNBUFFERED": "1", **(env or {})}
    container: dict = {
        "name": "sweep",
        "image": image,
        "command": list(PIPES_COMMAND),
        "resources": {
            "requests": {"cpu": cpu, "memory": memory, "ephemeral-storage": ephemeral_storage, GPU_RESOURCE: "1"},
            "limits": {"memory": memory, GPU_RESOURCE: "1"},
        },
    }
    spec: dict = {
        "restartPolicy": "Never",
        "nodeSelector": {GPU_PRODUCT_LABEL: label, **(extra_node_selector or {})},
        "containers": [container],
    }
    if tolerate_gpu_taint:
        # GPU node pools are commonly tainted so that only GPU work schedules there.
        spec["tolerations"] = [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
    if service_account:
        spec["serviceAccountName"] = service_account
    if image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": name} for name in image_pull_secrets]
    if cache_volume_claim:
        spec["volumes"] = [{"name": "kernelindex-cache", "persistentVolumeClaim": {"claimName": cache_volume_claim}}]
        container["volumeMounts"] = [{"name": "kernelindex-cache", "mountPath": cache_mount_path}]
        container_env["KERNELINDEX_CACHE_DIR"] = cache_mount_path
    container["env"] = [{"name": k, "value": v} for k, v in container_env.items()]
    meta = {
        "namespace": namespace,
        "labels": {
            "app.kubernetes.io/name": "kernelindex-sweep",
            "app.kubernetes.io/part-of": "kernelindex-pipeline",
            "kernelindex.dev/gpu": gpu_slug[:_LABEL_VALUE_LIMIT].strip("-"),
        },
    }
    return {"namespace": namespace, "image": image, "base_pod_meta": meta, "base_pod_spec": spec}
