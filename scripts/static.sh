#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One self-contained linerate for a router or a board: linked statically
# against musl, with OpenSSL's libcrypto, xxHash and cJSON built in from
# Debian's own source packages. scripts/cross.sh static-TARGET runs this:
#
#   scripts/static.sh [--no-test] {x86_64,aarch64,mipsel}
#
# into build-static-TARGET/linerate (stripped). The pieces:
#   build-src/                   the source packages (apt-get source; a
#                                deb-src entry is added to apt if none)
#   build-static-TARGET/musl     Debian's musl and musl-dev of the target
#   build-static-TARGET/kinc     the kernel's headers (linux/, asm/)
#   build-static-TARGET/deps     libcrypto.a, libxxhash.a, libcjson.a
#   build-static-TARGET/openssl  OpenSSL's build directory
# Then, unless --no-test: tests/integration/test_cross.py with the static
# binary on one end (under qemu-user when it is not x86-64) and
# tests/integration/test_static.py (statically linked, runs in a chroot
# holding nothing else, names its OpenSSL, --copy-self). Installs what it
# needs from Debian (root; idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A DEB_ARCH=([x86_64]=amd64 [aarch64]=arm64 [mipsel]=mipsel)
declare -A GNU=([x86_64]=x86_64-linux-gnu [aarch64]=aarch64-linux-gnu
	[mipsel]=mipsel-linux-gnu)
declare -A MUSL=([x86_64]=x86_64-linux-musl [aarch64]=aarch64-linux-musl
	[mipsel]=mipsel-linux-musl)
declare -A OSSL_TARGET=([x86_64]=linux-x86_64 [aarch64]=linux-aarch64
	[mipsel]=linux-mips32)
declare -A QEMU=([x86_64]="" [aarch64]=qemu-aarch64 [mipsel]=qemu-mipsel)
# MIPS soft float: an MT7621 has no FPU and OpenWrt's kernels for it do
# not emulate one, so the MIPS build may hold no FPU instruction. Debian's
# musl:mipsel and its libgcc are hard-float: this build makes its own musl
# from Debian's musl source, and the floating-point routines from glibc's
# source (soft-fp/, with cross/softfp/sfp-machine.h), all -msoft-float;
# its tests run under qemu with a CPU model without an FPU (24Kc).
declare -A FLOAT=([x86_64]="" [aarch64]="" [mipsel]=-msoft-float)
declare -A QEMU_CPU=([x86_64]="" [aarch64]="" [mipsel]=24Kc)
SOFTFP_FUNCS=(adddf3 subdf3 muldf3 divdf3 negdf2 eqdf2 gedf2 ledf2 unorddf2
	fixdfsi fixunsdfsi fixdfdi fixunsdfdi floatsidf floatunsidf floatdidf
	floatundidf extendsfdf2 truncdfsf2 addsf3 subsf3 mulsf3 divsf3 negsf2
	eqsf2 gesf2 lesf2 unordsf2 fixsfsi fixunssfsi fixsfdi fixunssfdi
	floatsisf floatunsisf floatdisf floatundisf)

# OpenSSL with what linerate uses and little else: the EVP ciphers
# AES-GCM and ChaCha20-Poly1305, HKDF and SHA-2, X25519 (in "ec"), the
# random generator; assembler routines on. No shared objects, no loadable
# engines or providers, no TLS.
OPENSSL_OPTS=(no-shared no-dso no-module no-engine no-legacy no-tests
	no-makedepend no-deprecated no-async no-autoload-config no-secure-memory
	no-err no-filenames no-comp no-srp no-psk no-ocsp no-cms no-ts no-ct
	no-cmp no-ssl no-tls no-dtls no-srtp no-nextprotoneg no-des no-rc2
	no-rc4 no-idea no-seed no-cast no-bf no-camellia no-aria no-sm2 no-sm3
	no-sm4 no-whirlpool no-md4 no-mdc2 no-rmd160 no-blake2 no-siphash
	no-cmac no-siv no-ocb no-scrypt no-gost no-ec2m no-dh no-dsa
	no-multiblock no-rfc3779 no-sock no-dgram no-ui-console no-ecdsa
	no-ssl-trace
	# each function in its own section: the link drops what nothing calls
	-ffunction-sections -fdata-sections)

test_too=1
[ "${1:-}" = "--no-test" ] && { test_too=0; shift; }
case $# in 1) ;; *) set -- "" ;; esac
case $1 in
x86_64 | aarch64 | mipsel) ;;
*)
	echo "usage: scripts/static.sh [--no-test] {x86_64,aarch64,mipsel}" >&2
	exit 2
	;;
esac
t=$1
dir=build-static-$t
say() { echo "static: $t: $*" >&2; }

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

as_root() {
	[ "$(id -u)" -eq 0 ] || { say "$* (run as root)"; exit 1; }
}

# The compilers and tools; the target's architecture known to apt (for
# apt-get download of its musl); a deb-src entry (for apt-get source).
deps() {
	local -a want=(meson ninja-build pkg-config make perl dpkg-dev file
		python3-pytest linux-libc-dev) missing=()
	local a updated=0
	if [ "$t" = x86_64 ]; then
		want+=(gcc)
	else
		want+=("gcc-${GNU[$t]//_/-}" "libc6-dev-${DEB_ARCH[$t]}-cross" qemu-user
			qemu-user-static)
	fi
	for a in "${want[@]}"; do installed "$a" || missing+=("$a"); done
	a=${DEB_ARCH[$t]}
	if [ "$a" != "$(dpkg --print-architecture)" ] &&
		! dpkg --print-foreign-architectures | grep -qx "$a"; then
		as_root "the $a architecture is not known to apt"
		dpkg --add-architecture "$a"
		updated=1
	fi
	if ! grep -rqs "^deb-src\|^Types:.*deb-src" /etc/apt/sources.list /etc/apt/sources.list.d; then
		as_root "apt has no deb-src entry"
		say "adding deb-src entries for Debian's source packages"
		add_deb_src
		updated=1
	fi
	if [ ${#missing[@]} -gt 0 ] || [ $updated = 1 ]; then
		as_root "missing packages: ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q >/dev/null
		if [ ${#missing[@]} -gt 0 ]; then
			say "installing ${missing[*]}"
			apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
		fi
	fi
}

# deb-src twins of the deb entries of Debian's own sources file
add_deb_src() {
	local src=/etc/apt/sources.list.d/debian.sources
	if [ -f "$src" ]; then
		sed -n '/^Types:/{s/.*/Types: deb-src/;p;b};p' "$src" \
			>/etc/apt/sources.list.d/linerate-src.sources
	elif grep -q "^deb " /etc/apt/sources.list 2>/dev/null; then
		grep "^deb " /etc/apt/sources.list | sed 's/^deb /deb-src /' \
			>/etc/apt/sources.list.d/linerate-src.list
	else
		say "no Debian sources entry to copy: add a deb-src entry to apt yourself"
		exit 1
	fi
}

# build-src/NAME-VERSION: the newest version of the source package that
# the mirror serves (a security update's source may be missing there)
source_pkg() {
	local name=$1 v
	mkdir -p build-src
	if [ -s "build-src/$name.dir" ] && [ -d "build-src/$(cat "build-src/$name.dir")" ]; then
		return
	fi
	for v in $(apt-cache showsrc "$name" | awk '/^Version:/ { print $2 }' | sort -rV); do
		if (cd build-src && apt-get source -q "$name=$v" >/dev/null 2>&1); then
			v=${v#*:}
			[ -d "build-src/$name-${v%%-*}" ] || { say "apt-get source $name=$v made no $name-${v%%-*}"; exit 1; }
			echo "$name-${v%%-*}" >"build-src/$name.dir.new"
			mv "build-src/$name.dir.new" "build-src/$name.dir"
			say "source of $name $v in build-src/$(cat "build-src/$name.dir")"
			return
		fi
	done
	say "apt-get source $name failed for every version"
	exit 1
}

# build-TARGET/musl: the target's musl, and gcc's specs for it
musl() {
	local arch=${DEB_ARCH[$t]} m=${MUSL[$t]} root p
	if [ -n "${FLOAT[$t]}" ]; then
		musl_soft
	elif [ ! -f "$dir/musl/usr/lib/$m/libc.a" ]; then
		rm -rf "$dir/musl" "$dir/debs"
		mkdir -p "$dir/musl" "$dir/debs"
		(cd "$dir/debs" && apt-get download -q "musl:$arch" "musl-dev:$arch" >/dev/null 2>&1) ||
			(apt-get update -q >/dev/null &&
				cd "$dir/debs" && apt-get download -q "musl:$arch" "musl-dev:$arch" >/dev/null)
		for p in "$dir"/debs/*.deb; do dpkg-deb -x "$p" "$dir/musl"; done
	fi
	root=$(cd "$dir/musl" && pwd)
	case $root in *"'"* | *" "* | *"#"*) say "$root: no quote, space or # in the path, please"; exit 1 ;; esac
	if [ -n "${FLOAT[$t]}" ]; then
		# musl's own specs for the tree it installed; the soft-float
		# routines ahead of libgcc's
		sh "build-src/$(cat build-src/musl.dir)/tools/musl-gcc.specs.sh" \
			"$root/usr/include/$m" "$root/usr/lib/$m" /lib/ld-musl-mipsel-sf.so.1 |
			sed "/^\*libgcc:\$/{n;s#^#$PWD/$dir/deps/lib/libsoftfp.a #}" >"$dir/musl-gcc.specs"
	else
		sed -e "s#/usr/include/$m#$root/usr/include/$m#g" \
			-e "s#/usr/lib/$m#$root/usr/lib/$m#g" \
			"$dir/musl/usr/lib/$m/musl-gcc.specs" >"$dir/musl-gcc.specs"
	fi
	# the kernel's headers, and nothing else of glibc's
	local k=/usr/${GNU[$t]}/include
	[ "$t" = x86_64 ] && k=/usr/include
	rm -rf "$dir/kinc"
	mkdir -p "$dir/kinc"
	ln -s "$k/linux" "$k/asm-generic" "$dir/kinc/"
	if [ "$t" = x86_64 ]; then
		ln -s "/usr/include/${GNU[$t]}/asm" "$dir/kinc/asm"
	else
		ln -s "$k/asm" "$dir/kinc/asm"
	fi
}

# build-TARGET/musl from Debian's musl source, for soft float
musl_soft() {
	local src m=${MUSL[$t]} want stamp=$dir/musl/soft.stamp
	src=$PWD/build-src/$(cat build-src/musl.dir)
	want="$(basename "$src") ${FLOAT[$t]}"
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
		return
	fi
	say "building musl ($(basename "$src"), ${FLOAT[$t]})"
	rm -rf "$dir/musl" "$dir/musl-build"
	mkdir -p "$dir/musl/usr" "$dir/musl-build"
	(
		cd "$dir/musl-build"
		root=$(cd ../musl/usr && pwd)
		CC="${GNU[$t]}-gcc ${FLOAT[$t]}" "$src/configure" --target="$m" \
			--prefix="$root" --includedir="$root/include/$m" \
			--libdir="$root/lib/$m" --disable-shared >configure.log 2>&1 ||
			{ cat configure.log; exit 1; }
		grep -q "^SUBARCH = .*sf" config.mak || { say "musl is not soft-float"; exit 1; }
		make -j"$(nproc)" CROSS_COMPILE="${GNU[$t]}-" >make.log 2>&1 ||
			{ grep -v "^${GNU[$t]}-gcc" make.log | tail -20; exit 1; }
		make install CROSS_COMPILE="${GNU[$t]}-" >install.log 2>&1 ||
			{ tail -20 install.log; exit 1; }
	)
	echo "$want" >"$stamp"
}

# glibc's source, its soft-fp/ and stdlib/longlong.h alone, into
# build-src/glibc-softfp (the whole tree is not needed)
glibc_softfp() {
	local v orig
	[ -f build-src/glibc-softfp/soft-fp/soft-fp.h ] && return
	mkdir -p build-src
	v=$(apt-cache showsrc glibc | awk '/^Version:/ { print $2 }' | sort -rV | head -n 1)
	(cd build-src && apt-get source --download-only -q "glibc=$v" >/dev/null 2>&1) ||
		{ say "apt-get source --download-only glibc=$v failed"; exit 1; }
	orig=$(ls build-src/glibc_*.orig.tar.* | head -n 1)
	rm -rf build-src/glibc-softfp build-src/glibc-x
	mkdir -p build-src/glibc-x
	tar xf "$orig" -C build-src/glibc-x --wildcards '*/soft-fp/*' '*/stdlib/longlong.h'
	mkdir -p build-src/glibc-softfp
	mv build-src/glibc-x/*/soft-fp build-src/glibc-x/*/stdlib build-src/glibc-softfp/
	rm -rf build-src/glibc-x
	say "soft-fp of glibc $v in build-src/glibc-softfp"
}

# deps/lib/libsoftfp.a: the floating-point routines, soft float
softfp() {
	local cc ar f g=build-src/glibc-softfp
	[ -n "${FLOAT[$t]}" ] || return 0
	cc=$(cc_cmd)
	ar=$(ar_cmd)
	mkdir -p "$dir/obj/softfp" "$dir/deps/lib"
	for f in "${SOFTFP_FUNCS[@]}"; do
		$cc -O2 -fPIC -I cross/softfp -I "$g/soft-fp" -I "$g/stdlib" \
			-c "$g/soft-fp/$f.c" -o "$dir/obj/softfp/$f.o"
	done
	rm -f "$dir/deps/lib/libsoftfp.a"
	$ar rcs "$dir/deps/lib/libsoftfp.a" "$dir"/obj/softfp/*.o
}

cc_cmd() {
	local c=gcc
	[ "$t" = x86_64 ] || c=${GNU[$t]}-gcc
	echo "$c ${FLOAT[$t]:+${FLOAT[$t]} }-specs $PWD/$dir/musl-gcc.specs -isystem $PWD/$dir/kinc"
}

ar_cmd() {
	if [ "$t" = x86_64 ]; then echo ar; else echo "${GNU[$t]}-ar"; fi
}

pc_file() { # NAME VERSION LIBS CFLAGS
	mkdir -p "$dir/deps/lib/pkgconfig"
	cat >"$dir/deps/lib/pkgconfig/$1.pc" <<-EOF
		prefix=$PWD/$dir/deps
		libdir=\${prefix}/lib
		includedir=\${prefix}/include

		Name: $1
		Description: $1 built for linerate's static build
		Version: $2
		Libs: -L\${libdir} $3
		Cflags: $4
	EOF
}

# libxxhash.a and libcjson.a from their sources
small_libs() {
	local cc ar x j
	cc=$(cc_cmd)
	ar=$(ar_cmd)
	x=build-src/$(cat build-src/xxhash.dir)
	j=build-src/$(cat build-src/cjson.dir)
	mkdir -p "$dir/deps/include/cjson" "$dir/deps/lib" "$dir/obj"
	$cc -O2 -fPIC -c "$x/xxhash.c" -o "$dir/obj/xxhash.o"
	$ar rcs "$dir/deps/lib/libxxhash.a" "$dir/obj/xxhash.o"
	cp "$x/xxhash.h" "$dir/deps/include/"
	pc_file libxxhash "${x##*-}" -lxxhash "-I\${includedir}"
	$cc -O2 -fPIC -c "$j/cJSON.c" -o "$dir/obj/cJSON.o"
	$ar rcs "$dir/deps/lib/libcjson.a" "$dir/obj/cJSON.o"
	cp "$j/cJSON.h" "$dir/deps/include/cjson/"
	pc_file libcjson "${j##*-}" "-lcjson -lm" "-I\${includedir} -I\${includedir}/cjson"
}

# libcrypto.a, configured as OPENSSL_OPTS says, into deps/
openssl() {
	local src stamp want
	src=$PWD/build-src/$(cat build-src/openssl.dir)
	want="${OSSL_TARGET[$t]} ${FLOAT[$t]} ${OPENSSL_OPTS[*]} $(basename "$src")"
	stamp=$dir/deps/openssl.stamp
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
		return
	fi
	say "building OpenSSL's libcrypto ($(basename "$src"), ${OSSL_TARGET[$t]}; a few minutes)"
	rm -rf "$dir/openssl"
	mkdir -p "$dir/openssl"
	local cc ar
	cc=$(cc_cmd)
	ar=$(ar_cmd)
	(
		cd "$dir/openssl"
		CC=$cc AR=$ar perl "$src/Configure" "${OSSL_TARGET[$t]}" \
			--prefix="$PWD/../deps" --libdir=lib --openssldir=/etc/ssl \
			"${OPENSSL_OPTS[@]}" >configure.log 2>&1 ||
			{ cat configure.log; exit 1; }
		make -j"$(nproc)" build_libs >make.log 2>&1 || { tail -40 make.log; exit 1; }
		make install_dev >install.log 2>&1 || { tail -40 install.log; exit 1; }
	)
	echo "$want" >"$stamp"
}

build() {
	local deps
	deps=$(cd "$dir/deps" && pwd)
	printf "[constants]\nspecs = '%s'\nkinc = '%s'\ndeps = '%s'\n" \
		"$PWD/$dir/musl-gcc.specs" "$PWD/$dir/kinc" "$deps" >"$dir/paths.ini"
	# set up again whenever the cross files change
	local want
	want=$(cat "$dir/paths.ini" "cross/static-$t.ini")
	if [ ! -f "$dir/build.ninja" ] || [ "$(cat "$dir/setup.stamp" 2>/dev/null)" != "$want" ]; then
		rm -rf "$dir/setup.stamp" "$dir/build.ninja" "$dir/meson-private" \
			"$dir/meson-info" "$dir/meson-logs"
		meson setup "$dir" --buildtype=release -Dtests=false \
			--cross-file "$dir/paths.ini" --cross-file "cross/static-$t.ini" \
			>"$dir/setup.log" 2>&1 || { tail -20 "$dir/setup.log"; exit 1; }
		printf '%s\n' "$want" >"$dir/setup.stamp"
	fi
	ninja -C "$dir" >"$dir/ninja.log" 2>&1 || { grep -v "^\[" "$dir/ninja.log" | tail -40; exit 1; }
	local wrap=""
	[ -n "${QEMU[$t]}" ] && wrap="${QEMU[$t]} "
	[ -n "${QEMU_CPU[$t]}" ] && wrap="${QEMU[$t]} -cpu ${QEMU_CPU[$t]} "
	printf '#!/bin/sh\nexec %s%s "$@"\n' "$wrap" "$(cd "$dir" && pwd)/linerate" \
		>"$dir/linerate-run"
	chmod +x "$dir/linerate-run"
	say "$dir/linerate: $(stat -c %s "$dir/linerate") bytes, $(file -b "$dir/linerate")"
}

run_tests() {
	local log=$dir/static-test.log
	[ -f build/build.ninja ] || meson setup build --buildtype=release >/dev/null
	ninja -C build >/dev/null
	say "integration subset (tests/integration/test_cross.py, test_static.py)"
	# every case must run here: a skip (no root, no namespaces) fails
	LINERATE_BIN="$PWD/build/linerate" LINERATE_CROSS_BIN="$PWD/$dir/linerate-run" \
		LINERATE_CROSS_NAME="static-$t" LINERATE_STATIC_BIN="$PWD/$dir/linerate" \
		LINERATE_STATIC_NAME="$t" \
		/usr/bin/python3 -m pytest -q -rs tests/integration/test_cross.py \
		tests/integration/test_static.py | tee "$log"
	if grep -q "skipped" "$log"; then
		say "some cases were skipped (above): they must run"
		exit 1
	fi
}

bash scripts/deps.sh # this machine's build and the test hosts
deps
source_pkg openssl
source_pkg xxhash
source_pkg cjson
if [ -n "${FLOAT[$t]}" ]; then
	source_pkg musl
	glibc_softfp
fi
musl
softfp
small_libs
openssl
build
[ $test_too = 1 ] && run_tests
say "done"
