"""Pod specs for GPU partitions, checked against the real dagster-k8s pod builder."""

import pytest

from kernelindex_pipeline.sweep.k8s import GPU_PRODUCT_LABEL, gpu_pool_labels, gpu_product_label, sweep_pod


def test_gpu_product_labels_follow_feature_discovery_naming():
    assert gpu_product_label("NVIDIA H100 80GB HBM3") == "NVIDIA-H100-80GB-HBM3"
    assert gpu_product_label("NVIDIA A100-SXM4-80GB") == "NVIDIA-A100-SXM4-80GB"
    assert gpu_product_label("NVIDIA GeForce RTX 4090") == "NVIDIA-GeForce-RTX-4090"
    assert gpu_product_label("NVIDIA B300 SXM6 (PC)") == "NVIDIA-B300-SXM6-PC"
    assert len(gpu_product_label("X " * 60)) <= 63
    assert gpu_pool_labels()["nvidia-h100-pcie"] == "NVIDIA-H100-PCIe"


@pytest.mark.parametrize(
    ("slug", "label"),
    [("nvidia-h100-80gb-hbm3", "NVIDIA-H100-80GB-HBM3"), ("nvidia-a100-sxm4-80gb", "NVIDIA-A100-SXM4-80GB")],
)
def test_pod_for_two_gpu_types(slug, label):
    pod = sweep_pod(
        slug, image="registry.example/kernelindex:1.2.3", namespace="kernelindex", service_account="sweeper"
    )
    spec = pod["base_pod_spec"]
    assert pod["namespace"] == "kernelindex" and pod["base_pod_meta"]["namespace"] == "kernelindex"
    assert spec["nodeSelector"] == {GPU_PRODUCT_LABEL: label}
    (container,) = spec["containers"]
    assert container["image"] == "registry.example/kernelindex:1.2.3"
    assert container["command"] == ["python", "-m", "kernelindex_pipeline.sweep.pipes_entry"]
    assert container["resources"]["requests"]["nvidia.com/gpu"] == "1"
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert {"name": "TZ", "value": "UTC"} in container["env"]
    assert spec["serviceAccountName"] == "sweeper"
    assert spec["restartPolicy"] == "Never"
    assert pod["base_pod_meta"]["labels"]["kernelindex.dev/gpu"] == slug


def test_pipes_k8s_client_builds_the_pod():
    """dagster-k8s turns base_pod_meta/base_pod_spec into a V1Pod: the keys and shapes are accepted."""
    from dagster_k8s.pipes import build_pod_body

    pod = sweep_pod("nvidia-h100-80gb-hbm3", image="img:1", namespace="ns", cache_volume_claim="kernelindex-cache")
    body = build_pod_body(
        pod_name="sweep-1",
        image=pod["image"],
        command=None,
        env_vars={"DAGSTER_PIPES_CONTEXT": "x"},
        base_pod_meta=pod["base_pod_meta"],
        base_pod_spec=pod["base_pod_spec"],
    )
    assert body.spec.node_selector == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    container = body.spec.containers[0]
    assert container.resources.limits["nvidia.com/gpu"] == "1"
    assert container.volume_mounts[0].mount_path == "/var/cache/kernelindex"
    assert body.spec.volumes[0].persistent_volume_claim.claim_name == "kernelindex-cache"
    env = {e.name: e.value for e in container.env}
    assert env["KERNELINDEX_CACHE_DIR"] == "/var/cache/kernelindex"
    assert env["DAGSTER_PIPES_CONTEXT"] == "x"
    assert body.spec.tolerations[0].key == "nvidia.com/gpu"


def test_unknown_gpu_is_refused_naming_the_catalogue():
    with pytest.raises(ValueError, match="unknown GPU slug 'nvidia-h300'.*nvidia-b200"):
        sweep_pod("nvidia-h300", image="img", namespace="ns")
