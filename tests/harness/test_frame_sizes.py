"""Host tests of scripts/frame_sizes.py, which holds the module's stack frames to the kernel's CONFIG_FRAME_WARN.
Run by scripts/host-test (python3 -m unittest discover -s tests/harness)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "scripts"))
import frame_sizes  # noqa: E402

# Shaped as llvm-objdump-19 -d --no-show-raw-insn prints a riscv64 object.
DISASSEMBLY = """
Disassembly of section .text:

0000000000000000 <small>:
       0:      \taddi\tsp, sp, -0x40
       4:      \tsd\tra, 0x38(sp)
      6a:      \taddi\tsp, sp, 0x40
      6e:      \tret

0000000000000070 <large>:
      70:      \taddi\tsp, sp, -0x7f0
      74:      \tsd\tra, 0x7e8(sp)
      78:      \tlui\ta0, 0x1
      7c:      \taddiw\ta0, a0, -0x3f0
      80:      \tsub\tsp, sp, a0
      84:      \tlui\ta1, 0x5
      88:      \tret

00000000000000a0 <leaf>:
      a0:      \tret
"""


class FrameSizes(unittest.TestCase):
    def test_prologues(self):
        sizes = frame_sizes.frame_sizes(DISASSEMBLY)
        self.assertEqual(sizes["small"], 0x40)
        # 0x7f0 by addi, then 0x1000 - 0x3f0 by lui/addiw and sub: the lui into a1 is not subtracted.
        self.assertEqual(sizes["large"], 0x7f0 + 0x1000 - 0x3f0)
        self.assertEqual(sizes["leaf"], 0)


if __name__ == "__main__":
    unittest.main()
