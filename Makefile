# Top-level entry points; meson + ninja do the work in build/.
#   make            configure (first time) and build qemu-system-x86_64
#   make check      build, then run every test (the README and .ci/run use it)
#   make install    install the binary (PREFIX, default /usr/local)
#   make kit        build the guest kits (scripts/build-guest-kit.sh)
PYTHON ?= /usr/bin/python3
BUILD ?= build

.PHONY: all check install kit clean
all: $(BUILD)/build.ninja
	ninja -C $(BUILD)

$(BUILD)/build.ninja:
	./configure --builddir=$(BUILD)

check: all
	$(PYTHON) -m pytest -v -rs tests

install: all
	meson install -C $(BUILD)

kit:
	scripts/build-guest-kit.sh

clean:
	rm -rf $(BUILD)
