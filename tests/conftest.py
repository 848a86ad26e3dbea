import os
import sys
import warnings

# Tests import smac_a2c / smac_numpy from the repository root.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
warnings.filterwarnings("ignore", category=DeprecationWarning)  # gymnasium's "-v4 is out of date"
