// A snippet, as `checkly import` writes an account's snippet next to the script that uses it: the
// script imports it, and it changes the request the script sees.
request.headers['Authorization'] = `Bearer ${process.env.SHOP_TOKEN}`
