// A dedicated worker of real_traffic.html: it logs, fetches and stays alive.
console.log('worker started');
fetch('real_traffic.json').then(r => r.json()).then(j => postMessage(j.items.length));
setInterval(() => console.log('worker tick', Date.now()), 250);
onmessage = (e) => { postMessage('echo ' + e.data); };
