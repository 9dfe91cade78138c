"""fabricgen's namespace lab (docs/lab.md); tools/lab.py is its command line."""
from .fabric import Capture, Lab, default_name, pcap_frames, read_counters, remove, sh, truth_gaps  # noqa: F401
from .spec import Impairment, LabError, LabSpec  # noqa: F401
from .stalls import CpuStallWatch, stalled_within  # noqa: F401
