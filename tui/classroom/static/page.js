// The class's page and the lecturer's: one terminal of the screen's fixed size, its font
// scaled to fit the window (a window never resizes the shared screen). Only the
// lecturer's page sends anything: its keys.
(function () {
  "use strict";
  const holder = document.getElementById("screen");
  const settings = JSON.parse(holder.dataset.settings);
  const count = document.getElementById("count");
  const state = document.getElementById("state");
  count.textContent = String(settings.viewers);

  const term = new Terminal({
    cols: settings.cols,
    rows: settings.rows,
    scrollback: 0,
    fontSize: 16,
    disableStdin: !settings.lecturer,
    cursorBlink: false,
    allowProposedApi: false,
  });
  term.open(holder);
  window.crawlscopeTerminal = term; // for a test or a curious lecturer's console

  // The font size at which cols x rows fill the window, found by measuring the
  // terminal at a known size and scaling (cells grow in proportion to the font).
  function fit() {
    const box = holder.getBoundingClientRect();
    const drawn = holder.querySelector(".xterm-screen");
    if (!drawn || box.width === 0 || box.height === 0) return;
    const size = term.options.fontSize;
    const scale = Math.min(box.width / drawn.offsetWidth, box.height / drawn.offsetHeight);
    const wanted = Math.max(4, Math.floor(size * scale * 4) / 4);
    if (Math.abs(wanted - size) >= 0.25) {
      term.options.fontSize = wanted;
    }
  }
  window.addEventListener("resize", () => requestAnimationFrame(fit));
  requestAnimationFrame(fit);
  setTimeout(fit, 300);

  const address = new URL("ws", window.location.href);
  address.protocol = address.protocol === "https:" ? "wss:" : "ws:";
  const socket = new WebSocket(address);
  socket.binaryType = "arraybuffer";
  socket.addEventListener("message", (event) => {
    if (typeof event.data === "string") {
      const message = JSON.parse(event.data);
      if (typeof message.viewers === "number") count.textContent = String(message.viewers);
      return;
    }
    term.write(new Uint8Array(event.data));
  });
  socket.addEventListener("close", () => {
    state.textContent = " \u00b7 disconnected (reload to watch again)";
  });

  if (settings.lecturer) {
    const send = (data) => {
      if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(["stdin", data]));
    };
    term.onData(send);
    term.onBinary(send);
    term.focus(); // the keys work at once, with no click first
    window.addEventListener("focus", () => term.focus());
  }
})();
