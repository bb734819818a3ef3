#!/usr/bin/env bash
# Install what an rla/OSWorld-v0 desktop session needs: Debian's desktop packages and the controller's runtime.
#
#   sudo scripts/install-desktop.sh            # on a Debian 12 (bookworm) host, as root
#   RUN bash /tmp/install-desktop.sh           # in a Dockerfile, on a bookworm (minbase) rootfs
#
# It installs, with apt: Xvfb, openbox, xdotool, wmctrl, D-Bus, AT-SPI, mousepad, gnumeric, LibreOffice Calc,
# Writer and Impress (GTK3 VCL plugin, so LibreOffice exposes its widgets over AT-SPI), Chromium, GIMP,
# Thunderbird, VLC, gnome-terminal, nautilus, xterm, socat, sqlite3, xdg-utils, bubblewrap, fonts, and Debian's
# python3 with pyatspi, FastAPI, uvicorn, multipart, Xlib, Pillow and websocket-client. It writes the
# `google-chrome` launcher (${RLA_CHROME_LAUNCHER:-/usr/local/bin/google-chrome}): Chromium started as OSWorld
# starts Google Chrome, so OSWorld's tasks run as they are (see the launcher's own comment). Then it makes the
# runtime venv at ${RLA_DESKTOP_VENV:-/opt/rla-desktop} (--system-site-packages, so the apt modules are visible)
# and pip installs the versions of pyautogui and mss the controller was tested with. Running it again changes
# nothing that is already in place (idempotent).
#
# The local provider then finds the runtime at $RLA_DESKTOP_PYTHON or /opt/rla-desktop/bin/python.
set -euo pipefail

VENV="${RLA_DESKTOP_VENV:-/opt/rla-desktop}"
CHROME_LAUNCHER="${RLA_CHROME_LAUNCHER:-/usr/local/bin/google-chrome}"
# Tested together on Debian 12 (python 3.11.2) on 2026-11-30. pyautogui's own dependency list names PyPI's
# python3-xlib 0.15, which would shadow Debian's python3-xlib 0.33 in the venv, so its dependencies are pinned
# here one by one and installed with --no-deps. MouseInfo is left out on purpose: without tkinter it calls
# sys.exit() when pyautogui imports it (pyautogui runs fine without it).
PIP_PACKAGES=(
    "pyautogui==0.9.54"
    "mss==10.2.0"
    "pymsgbox==2.0.1"
    "pytweening==1.2.0"
    "pyscreeze==1.0.1"
    "pygetwindow==0.0.9"
    "pyrect==0.2.0"
    "pyperclip==1.11.0"
)
APT_PACKAGES=(
    # display, window manager, window control, input
    xvfb openbox xdotool wmctrl x11-utils
    # pyautogui.screenshot() in agents' code: pyscreeze shells out to scrot on X11 (OSWorld's VM has gnome-screenshot)
    scrot
    # session bus and accessibility
    dbus dbus-x11 at-spi2-core gir1.2-atspi-2.0 libatk-adaptor
    # apps
    mousepad gnumeric libreoffice-calc libreoffice-writer libreoffice-impress libreoffice-gtk3 xterm
    chromium gimp thunderbird vlc gnome-terminal nautilus
    # GNOME Videos: the default video player of OSWorld's Ubuntu (with VLC alone, xdg-mime already answers vlc.desktop
    # and "set VLC as the default video player" would hold at reset)
    totem
    # what OSWorld's tasks call beside the apps: socat forwards Chrome's DevTools port 9222 -> 1337, xdg-open,
    # sqlite3 (Chrome's History and Cookies files)
    socat xdg-utils sqlite3
    # local sessions run in their own namespaces
    bubblewrap procps
    # fonts (Liberation, Carlito and Caladea keep Office documents' metrics) and icons (GTK and LibreOffice
    # draw their SVG icons and check boxes through librsvg)
    fonts-dejavu-core fonts-liberation2 fonts-crosextra-carlito fonts-crosextra-caladea
    librsvg2-common adwaita-icon-theme hicolor-icon-theme
    # the controller's runtime
    python3 python3-venv python3-pip python3-pyatspi python3-fastapi python3-uvicorn python3-multipart
    python3-xlib python3-pil
    # the DevTools protocol (Chrome's tabs) from inside the session
    python3-websocket
)

if [ "$(id -u)" -ne 0 ]; then
    echo "install-desktop.sh: run me as root (apt-get and ${VENV} need it); got uid $(id -u)." >&2
    exit 1
fi

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "install-desktop.sh: apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends "${missing[@]}"
else
    echo "install-desktop.sh: apt packages already installed"
fi

# The google-chrome launcher. OSWorld's tasks start ["google-chrome", "--remote-debugging-port=1337"] and read
# Chrome's profile files from ~/.config/google-chrome/Default/; Debian ships Chromium, whose own profile is
# ~/.config/chromium. An existing google-chrome that is not ours (a real Chrome) is left alone.
LAUNCHER_MARK="# rla google-chrome launcher"
if [ -e "${CHROME_LAUNCHER}" ] && ! grep -q "${LAUNCHER_MARK}" "${CHROME_LAUNCHER}"; then
    echo "install-desktop.sh: ${CHROME_LAUNCHER} exists and is not rla's launcher; leaving it as it is"
else
    mkdir -p "$(dirname "${CHROME_LAUNCHER}")"
    cat > "${CHROME_LAUNCHER}.tmp" <<EOF
#!/bin/sh
${LAUNCHER_MARK} (written by scripts/install-desktop.sh): Chromium as OSWorld starts Google Chrome.
# - the profile is ~/.config/google-chrome (where OSWorld's getters read Bookmarks, History, Preferences,
#   Cookies); naming it also lets --remote-debugging-port work (Chromium ignores that flag on its default profile)
# - no first-run page, default-browser question or keyring prompt; /dev/shm may be small in a container
# - --force-renderer-accessibility: pages' widgets show in the accessibility tree
# - --no-sandbox only where Chromium's sandbox cannot work: it needs unprivileged user namespaces and a chroot
#   inside one (to /proc/self/fdinfo/), which most containers forbid; the probe below tries exactly that.
#   Chromium refuses to run as root with its sandbox.
# - XDG_CURRENT_DESKTOP=GNOME, as in OSWorld's Ubuntu VM: Chromium's default theme is then GTK (the desktop's),
#   not "Classic", so a task that asks to switch the appearance mode starts where OSWorld's starts
# Every argument given is passed on, after these.
set -u
export XDG_CURRENT_DESKTOP=GNOME
sandbox=""
if [ "\$(id -u)" -eq 0 ] || ! unshare --user --map-root-user --pid --net --fork \\
        python3 -c "import os; os.chroot('/proc/self/fdinfo/')" >/dev/null 2>&1; then
    sandbox="--no-sandbox"
fi
exec /usr/bin/chromium --user-data-dir="\${HOME}/.config/google-chrome" --no-first-run --no-default-browser-check \\
    --password-store=basic --disable-dev-shm-usage --force-renderer-accessibility --disable-component-update \\
    \${sandbox} "\$@"
EOF
    chmod 0755 "${CHROME_LAUNCHER}.tmp"
    mv "${CHROME_LAUNCHER}.tmp" "${CHROME_LAUNCHER}"
    echo "install-desktop.sh: wrote the google-chrome launcher ${CHROME_LAUNCHER}"
fi

if [ ! -x "${VENV}/bin/python" ]; then
    echo "install-desktop.sh: creating the runtime venv ${VENV}"
    /usr/bin/python3 -m venv --system-site-packages "${VENV}"
fi
if ! "${VENV}/bin/python" - "${PIP_PACKAGES[@]}" <<'EOF'
import sys
from importlib.metadata import version, PackageNotFoundError
for spec in sys.argv[1:]:
    name, _, wanted = spec.partition("==")
    try:
        if version(name) != wanted:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
EOF
then
    echo "install-desktop.sh: pip install ${PIP_PACKAGES[*]}"
    "${VENV}/bin/python" -m pip install --no-cache-dir --no-deps --disable-pip-version-check "${PIP_PACKAGES[@]}"
else
    echo "install-desktop.sh: runtime venv already has ${PIP_PACKAGES[*]}"
fi

# The check that matters: the controller's imports work under the runtime interpreter.
# (pyautogui itself connects to $DISPLAY on import, so it is only located here, not imported.)
"${VENV}/bin/python" -c "import fastapi, uvicorn, multipart, pyatspi, Xlib, PIL, mss, importlib.util as u; \
assert u.find_spec('pyautogui') and u.find_spec('pyscreeze') and u.find_spec('pymsgbox')" \
    || { echo "install-desktop.sh: the runtime ${VENV}/bin/python cannot import the controller's modules" >&2; exit 1; }
echo "install-desktop.sh: ready (runtime: ${VENV}/bin/python)"
