# The devices of the project's outer QEMU (scripts/build-qemu, configured --without-default-devices): the virt
# machine, which selects its own (interrupt controllers with AIA, virtio-mmio, the UART, fw_cfg), and the virtio
# devices scripts/qemu-run adds to it: the console of the guest command's output and the 9p file systems of the
# nested entries.
CONFIG_RISCV_VIRT=y
CONFIG_VIRTIO_SERIAL=y
CONFIG_VIRTIO_9P=y
