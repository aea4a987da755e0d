import sys
from pathlib import Path

# The package from this checkout, with the build tree's libattnc.so.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
